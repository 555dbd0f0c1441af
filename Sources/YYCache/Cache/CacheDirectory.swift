#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where ``Cache/init(name:)`` puts caches: the Linux stand-in for iOS's Caches directory.
enum CacheDirectory {
    /// The user's cache directory: `XDG_CACHE_HOME` when it is an absolute path (the XDG Base
    /// Directory spec says relative values are invalid and must be ignored), else
    /// `$HOME/.cache`, else `<password database home>/.cache`.
    ///
    /// - Parameters:
    ///   - environment: The environment to read (a parameter so tests need not change the
    ///     process's).
    ///   - passwordHome: Looks the home directory up in the password database.
    /// - Returns: The directory, or `nil` if none can be found.
    static func resolve(
        environment: [String: String],
        passwordHome: () -> String? = CacheDirectory.passwordDatabaseHome
    ) -> String? {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return xdg
        }
        if let home = environment["HOME"], !home.isEmpty {
            return join(home, ".cache")
        }
        if let home = passwordHome(), !home.isEmpty {
            return join(home, ".cache")
        }
        return nil
    }

    /// The calling user's home directory from the password database (`getpwuid_r`).
    static func passwordDatabaseHome() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = max(Int(sysconf(Int32(_SC_GETPW_R_SIZE_MAX))), 1024)
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            // pw_dir points into the buffer: read it while the buffer is still bound.
            let (status, home) = buffer.withUnsafeMutableBufferPointer { bytes -> (Int32, String?) in
                let status = getpwuid_r(getuid(), &entry, bytes.baseAddress!, bytes.count, &result)
                guard status == 0, result != nil, let directory = entry.pw_dir else { return (status, nil) }
                return (status, String(cString: directory))
            }
            if status == ERANGE {
                size *= 2
                continue
            }
            return home
        }
        return nil
    }

    /// Whether `name` is one folder name inside a directory: not empty, not `.` or `..`, and
    /// without `/` or NUL (so `join(directory, name)` cannot leave `directory`).
    static func isFolderName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(0) && !name.utf8.contains(UInt8(ascii: "/"))
    }

    /// `directory/component`, without doubling a trailing slash.
    static func join(_ directory: String, _ component: String) -> String {
        directory.hasSuffix("/") ? directory + component : directory + "/" + component
    }

    /// The last path component (trailing slashes ignored); the path itself if it has none.
    static func lastComponent(of path: String) -> String {
        let trimmed = path.reversed().drop { $0 == "/" }
        let component = String(trimmed.prefix { $0 != "/" }.reversed())
        return component.isEmpty ? path : component
    }
}
