import ArchiveSink
import CurlTransport
import DirectorySink
import FoundationTransport
import ITunesSource
import MediaFetchCore
import URLListSource

/// Every plugin this package ships, with the defaults a config falls back on.
public enum BundledPlugins {
    /// The bundled sources (`itunes`, `urls`), transports (`curl`, the default, and `foundation`) and sinks
    /// (`directory`, the default, and `tar`). A new registry each time: add your own plugins to a copy.
    public static var registry: PluginRegistry {
        var registry = PluginRegistry()
        registry.register(source: ITunesSource.descriptor)
        registry.register(source: URLListSource.descriptor)
        registry.register(transport: CurlTransport.descriptor, isDefault: true)
        registry.register(transport: FoundationTransport.descriptor)
        registry.register(sink: DirectorySink.descriptor, isDefault: true)
        registry.register(sink: ArchiveSink.descriptor)
        return registry
    }
}
