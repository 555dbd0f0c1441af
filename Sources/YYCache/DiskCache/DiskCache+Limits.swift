import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Core-wide settings: every DiskCache object on the same path sees the same values. After
// close() the getters answer the defaults and the setters do nothing.
extension DiskCache {
    /// A name for debugging, shared by every object on the path. Default `nil`.
    ///
    /// The corresponding C functions are `yyc_diskcache_copy_name` and `yyc_diskcache_set_name`.
    public var name: String? {
        get {
            withOpenCore { core -> String? in
                guard let copy = yyc_diskcache_copy_name(core) else { return nil }
                defer { yyc_free(copy) }
                return String(cString: copy)
            } ?? nil
        }
        set {
            _ = withOpenCore { core in
                CStrings.withOptional(newValue.map { $0.filter { $0 != "\0" } }) {
                    yyc_diskcache_set_name(core, $0)
                }
            }
        }
    }

    /// The maximum number of values, enforced by the trims and the auto-trim only (never by a
    /// write), as in YYDiskCache. Default `Int.max`: no limit. A negative limit counts as 0.
    ///
    /// The corresponding C functions are `yyc_diskcache_count_limit` and
    /// `yyc_diskcache_set_count_limit`.
    public var countLimit: Int {
        get { withOpenCore { Int(yyc_diskcache_count_limit($0)) } ?? .max }
        set { _ = withOpenCore { yyc_diskcache_set_count_limit($0, Int64(max(newValue, 0))) } }
    }

    /// The maximum total size in bytes, enforced by the trims and the auto-trim only. Default
    /// `Int.max`: no limit. A negative limit counts as 0.
    ///
    /// The corresponding C functions are `yyc_diskcache_cost_limit` and
    /// `yyc_diskcache_set_cost_limit`.
    public var costLimit: Int {
        get { withOpenCore { Int(yyc_diskcache_cost_limit($0)) } ?? .max }
        set { _ = withOpenCore { yyc_diskcache_set_cost_limit($0, Int64(max(newValue, 0))) } }
    }

    /// The maximum time since a value was last accessed, enforced by the trims and the auto-trim
    /// only. Default `nil`: no limit. A negative duration is stored as zero.
    ///
    /// The corresponding C functions are `yyc_diskcache_age_limit` and
    /// `yyc_diskcache_set_age_limit`.
    public var maximumAge: Duration? {
        get { DurationLimit.limitDuration(seconds: withOpenCore { yyc_diskcache_age_limit($0) } ?? .infinity) }
        set { _ = withOpenCore { yyc_diskcache_set_age_limit($0, DurationLimit.limitSeconds(newValue)) } }
    }

    /// YYCache's spelling of ``maximumAge``: seconds, `.greatestFiniteMagnitude` for no limit.
    @available(*, deprecated, message: "use maximumAge (a Duration; nil: no limit)")
    public var ageLimit: TimeInterval {
        get { withOpenCore { yyc_diskcache_age_limit($0) } ?? .greatestFiniteMagnitude }
        set { _ = withOpenCore { yyc_diskcache_set_age_limit($0, newValue) } }
    }

    /// Free space, in bytes, to keep on the file system holding the cache: the auto-trim evicts
    /// least recently accessed values while there is less. Default 0 (off).
    ///
    /// The corresponding C functions are `yyc_diskcache_free_disk_space_limit` and
    /// `yyc_diskcache_set_free_disk_space_limit`.
    public var freeDiskSpaceLimit: Int {
        get { withOpenCore { Int(yyc_diskcache_free_disk_space_limit($0)) } ?? 0 }
        set { _ = withOpenCore { yyc_diskcache_set_free_disk_space_limit($0, Int64(max(newValue, 0))) } }
    }

    /// The time between background trims (cost, count, age, free space). Default 60 seconds;
    /// `nil` (or zero) pauses the auto-trim.
    ///
    /// The corresponding C functions are `yyc_diskcache_auto_trim_interval` and
    /// `yyc_diskcache_set_auto_trim_interval`.
    public var autoTrimPeriod: Duration? {
        get { DurationLimit.periodDuration(seconds: withOpenCore { yyc_diskcache_auto_trim_interval($0) } ?? 60) }
        set { _ = withOpenCore { yyc_diskcache_set_auto_trim_interval($0, DurationLimit.periodSeconds(newValue)) } }
    }

    /// YYCache's spelling of ``autoTrimPeriod``: seconds; a value `<= 0` pauses the auto-trim.
    @available(*, deprecated, message: "use autoTrimPeriod (a Duration; nil: paused)")
    public var autoTrimInterval: TimeInterval {
        get { withOpenCore { yyc_diskcache_auto_trim_interval($0) } ?? 60 }
        set { _ = withOpenCore { yyc_diskcache_set_auto_trim_interval($0, newValue) } }
    }

    /// Whether the core also prints its errors to standard error. Default `false` (errors are
    /// thrown).
    ///
    /// The corresponding C functions are `yyc_diskcache_error_logs_enabled` and
    /// `yyc_diskcache_set_error_logs_enabled`.
    public var errorLogsEnabled: Bool {
        get { withOpenCore { yyc_diskcache_error_logs_enabled($0) } ?? false }
        set { _ = withOpenCore { yyc_diskcache_set_error_logs_enabled($0, newValue) } }
    }
}
