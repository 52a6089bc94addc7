import Foundation
import Synchronization

/// A sink that plans each item's asset once per run: a queue hands the pipeline an item again when it is
/// resumed, and a sink that reserves names in call order (a directory's `Title (2).m4a`) must give it the name
/// it gave the first time.
final class PlanOnceSink: Sink {
    let base: any Sink
    private let plans = Mutex<[String: StoragePlan]>([:])

    init(_ base: any Sink) {
        self.base = base
    }

    var assets: [AssetKind] { base.assets }
    func url(for asset: AssetKind, of item: MediaItem) -> URL? { base.url(for: asset, of: item) }
    var needsDigests: Bool { base.needsDigests }
    var commitsEachStore: Bool { base.commitsEachStore }
    var pathReserver: PathReserver? { base.pathReserver }
    var inMemoryStagingLimit: Int64 { base.inMemoryStagingLimit }

    func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let key = item.id + "\u{0}" + asset.rawValue
        if let plan = plans.withLock({ $0[key] }) { return plan }
        let plan = try await base.plan(item, asset: asset)
        plans.withLock { $0[key] = plan }
        return plan
    }

    func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        try await base.store(file, as: plan)
    }

    func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        try await base.keep(plan, stored: record)
    }

    func finish() async throws { try await base.finish() }
    func prepare() async throws { try await base.prepare() }
    func discardUnfinished() async throws -> [String] { try await base.discardUnfinished() }
}
