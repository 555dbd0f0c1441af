/// Where and how a ``RemoteCache`` reaches Redis.
///
/// ```swift
/// var configuration = RemoteConfiguration(url: "redis://cache.internal:6379", namespace: "articles")
/// configuration.commandTimeout = .milliseconds(200)
/// let remote = try RemoteCache(configuration)
/// ```
public struct RemoteConfiguration: Sendable {
    /// `"redis://[user[:password]@]host[:port][/db]"` or
    /// `"unix://[user[:password]@]/path/to/redis.sock[?db=N]"` (user and password
    /// percent-encoded; an IPv6 host in brackets).
    public var url: String

    /// Every Redis key the cache writes is the namespace, `":"`, then the key. Caches that share
    /// values use the same namespace; pick namespaces without `":"` so that none is another's
    /// prefix.
    public var namespace: String

    /// How long a connect may take. Default 1 s.
    public var connectTimeout: Duration = .seconds(1)

    /// How long each command may take. Default 500 ms.
    public var commandTimeout: Duration = .milliseconds(500)

    /// The time to live of values stored without one; `nil` (the default): they live until
    /// removed or evicted by Redis.
    public var defaultTimeToLive: Duration?

    /// A configuration with the default timeouts and no default time to live.
    public init(url: String, namespace: String) {
        self.url = url
        self.namespace = namespace
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
