#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The async loads under way, one per disk core and key (``DiskCache/value(_:forKey:orLoad:)``):
/// callers that miss on a key join its task instead of starting another (`AsyncLoadFlights`).
enum DiskCacheLoads {
    /// A key of one core (by address: every object on the path shares the core).
    struct Slot: Hashable, Sendable {
        let core: UInt
        let key: String
    }

    /// Every core's loads.
    static let shared = AsyncLoadFlights<Slot, Data>()
}
