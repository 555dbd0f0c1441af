/// The two-level cache's async loads under way, one per key (the async
/// `Cache.value(forKey:orLoad:)`; see `AsyncLoadFlights`).
typealias CacheAsyncLoads<Value: Sendable> = AsyncLoadFlights<String, Value>
