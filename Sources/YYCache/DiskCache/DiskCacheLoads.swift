#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The loads under way, one per disk core and key (``DiskCache/value(_:forKey:orLoad:)``, async
/// and blocking): callers that miss on a key join its load instead of starting another
/// (`AsyncLoadFlights`, `BlockingLoadFlights`).
enum DiskCacheLoads {
    /// A key of one core (by address: every object on the path shares the core).
    struct Slot: Hashable, Sendable {
        let core: UInt
        let key: String
    }

    /// Every core's async loads.
    static let shared = AsyncLoadFlights<Slot, Data>()
    /// Every core's blocking loads.
    static let blocking = BlockingLoadFlights<Slot, Data>()
}
