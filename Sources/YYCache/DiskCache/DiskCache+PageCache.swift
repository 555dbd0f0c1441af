import CYYCache

extension DiskCache {
    /// The size, in bytes, of the page cache of the manifest's SQLite connection: how much of the
    /// manifest (its rows and its key index) stays in memory between calls. Default 2,048,000
    /// (SQLite's own default, 2,000 KiB). A cache of many entries reads and writes with fewer
    /// system calls when its whole key index fits. Rounded up to whole KiB; 0 or less restores the
    /// default. Shared by every object on the path; after `close()` the getter answers 0 and the
    /// setter does nothing.
    ///
    /// Memory-mapped reads of the manifest stay off whatever the size: a file that another process
    /// truncates, or a failing disk, would end the process with `SIGBUS` instead of failing a read.
    ///
    /// The corresponding C functions are `yyc_diskcache_page_cache_size` and
    /// `yyc_diskcache_set_page_cache_size`.
    public var pageCacheSize: Int {
        get { withOpenCore { Int(yyc_diskcache_page_cache_size($0)) } ?? 0 }
        set { _ = withOpenCore { yyc_diskcache_set_page_cache_size($0, Int64(newValue)) } }
    }
}
