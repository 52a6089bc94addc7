import ArchiveSink
import CurlTransport
import DirectorySink
import ExecPlugins
import FoundationTransport
import ITunesSource
import MediaFetchCore
import PodcastSource
import PostgreSQLLedger
import S3Sink
import URLListSource

/// Every plugin this package ships, with the defaults a config falls back on.
public enum BundledPlugins {
    /// The bundled sources (`itunes`, `urls`, `podcast`, `exec`), transports (`curl`, the default, and
    /// `foundation`) and sinks (`directory`, the default, `tar`, `exec` and `s3`). A new registry each time: add
    /// your own plugins to a copy.
    public static var registry: PluginRegistry {
        var registry = PluginRegistry()
        registry.register(source: ITunesSource.descriptor)
        registry.register(source: URLListSource.descriptor)
        registry.register(source: PodcastSource.descriptor)
        registry.register(source: ExecSource.descriptor)
        registry.register(transport: CurlTransport.descriptor, isDefault: true)
        registry.register(transport: FoundationTransport.descriptor)
        registry.register(sink: DirectorySink.descriptor, isDefault: true)
        registry.register(sink: ArchiveSink.descriptor)
        registry.register(sink: ExecSink.descriptor)
        registry.register(sink: S3Sink.descriptor)
        registry.register(ledger: PostgreSQLLedger.descriptor)
        return registry
    }
}
