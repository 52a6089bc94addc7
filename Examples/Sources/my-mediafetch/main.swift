import FlatSink
import Foundation
import MediaFetchCLI

var registry = BundledPlugins.registry
registry.register(sink: FlatSink.descriptor)
exit(await CLI.main(Array(CommandLine.arguments.dropFirst()), registry: registry))
