import CYYCache

/// Where a ``KVStorage`` keeps values (YYKVStorageType).
public enum KVStorageType: Sendable {
    /// Every value in a file under `data/`; every save needs a file name.
    case file
    /// Every value inline in the SQLite manifest; file names are ignored.
    case sqlite
    /// Per item: in a file when a file name is given, else inline.
    case mixed

    var cValue: yyc_kv_type {
        switch self {
        case .file: YYC_KV_FILE
        case .sqlite: YYC_KV_SQLITE
        case .mixed: YYC_KV_MIXED
        }
    }

    init(_ cValue: yyc_kv_type) {
        switch cValue {
        case YYC_KV_FILE: self = .file
        case YYC_KV_SQLITE: self = .sqlite
        default: self = .mixed
        }
    }
}
