/// The source of a queue-fed run: the items a ``DownloadQueue`` is handed, as they come, until it is closed.
struct QueueSource: Source {
    let items: AsyncStream<MediaItem>

    func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        for await item in items {
            try await emit(.item(item))
        }
    }
}
