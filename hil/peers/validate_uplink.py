#!/usr/bin/env python3
"""Validates docs/uplink-openapi.yaml as OpenAPI 3, and a batch (JSON on stdin) against its
RecordBatch schema, or against the schema named second (BatchResponse: an answer). Prints VALID or
the first error. Usage: validate_uplink.py SPEC [SCHEMA] < document.json"""
import json
import sys

from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

spec, _ = read_from_filename(sys.argv[1])
validate(spec)
schema = dict(spec["components"]["schemas"][sys.argv[2] if len(sys.argv) > 2 else "RecordBatch"])
schema["components"] = spec["components"]
batch = json.load(sys.stdin)
errors = sorted(OAS30Validator(schema).iter_errors(batch), key=lambda e: list(e.path))
print("VALID" if not errors else f"INVALID {list(errors[0].path)}: {errors[0].message}")
