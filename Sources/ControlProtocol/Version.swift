/// bessd's version, shown by every executable's `--version`.
public enum BessdVersion {
    public static let string = "0.1.0"
}
