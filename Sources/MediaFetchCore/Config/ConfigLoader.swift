import Foundation

/// Reads a YAML config into a validated ``PipelineSpec``.
///
/// The steps, each of which can only fail with a ``ConfigError`` pointing at `file:line:column`:
/// 1. libyaml parses the text into a tree that keeps every node's position (one document; no anchors or aliases).
/// 2. Duplicate keys are rejected, then each `--set` override is applied to the tree.
/// 3. The tree is validated against the registry's plugins; each scalar value is interpolated (`${VAR}`) and
///    converted by its option's type; defaults fill what was left out.
public enum ConfigLoader {
    /// A config file larger than this is surely not a config, and reading it whole would be a memory hazard.
    static let maxFileSize = 4 << 20

    /// Loads the config file at `path`.
    /// - Parameters:
    ///   - path: the config file, as the user gave it; messages show it this way, and relative paths in the
    ///     file resolve against its directory.
    ///   - overrides: `--set` arguments, `key.path=value`, applied in order.
    ///   - environment: where `${VAR}` is looked up, and `HOME` for `~`.
    ///   - registry: the plugins a section's `use:` may name, and their options.
    /// - Throws: ``ConfigError`` for every problem, including a file that cannot be read.
    public static func load(
        path: String,
        overrides: [String] = [],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        registry: PluginRegistry
    ) throws(ConfigError) -> PipelineSpec {
        let bytes = try readFile(path)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        return try load(
            bytes: bytes, path: path, baseDirectory: directory, overrides: overrides, environment: environment,
            registry: registry)
    }

    /// Loads a config given as text (tests, configs from elsewhere).
    /// - Parameters:
    ///   - text: the YAML.
    ///   - path: the name locations carry.
    ///   - baseDirectory: what relative paths in the text resolve against, and where `state:` defaults to.
    ///   - overrides: `--set` arguments, `key.path=value`, applied in order.
    ///   - environment: where `${VAR}` is looked up (nothing, by default).
    ///   - registry: the plugins a section's `use:` may name, and their options.
    /// - Throws: ``ConfigError``.
    public static func load(
        text: String,
        path: String,
        baseDirectory: URL,
        overrides: [String] = [],
        environment: [String: String] = [:],
        registry: PluginRegistry
    ) throws(ConfigError) -> PipelineSpec {
        try load(
            bytes: Array(text.utf8), path: path, baseDirectory: baseDirectory, overrides: overrides,
            environment: environment, registry: registry)
    }

    /// The candidate closest to `word` by edit distance (case-insensitive), when it is close enough to be a
    /// plausible typo (at most max(2, a third of the word's length) edits); nil otherwise.
    public static func nearest(_ word: String, in candidates: [String]) -> String? {
        EditDistance.nearest(word, in: candidates)
    }

    private static func load(
        bytes: [UInt8],
        path: String,
        baseDirectory: URL,
        overrides: [String],
        environment: [String: String],
        registry: PluginRegistry
    ) throws(ConfigError) -> PipelineSpec {
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let converter = OptionConverter(
            interpolator: EnvironmentInterpolator(environment: environment),
            configDirectory: URL(fileURLWithPath: baseDirectory.path, isDirectory: true, relativeTo: workingDirectory)
                .standardizedFileURL,
            workingDirectory: workingDirectory,
            homeDirectory: home)
        let validator = ConfigValidator(registry: registry, path: path, converter: converter)

        let parsed = try YAMLParser.parse(bytes, options: .init(file: path, origin: .file))
        guard var root = parsed, !root.isNull else {
            throw ConfigError(
                "\(path) is empty; a config needs at least a source: section, e.g.\n" + validator.example(),
                at: SourceLocation(file: path, line: 1, column: 1))
        }
        guard case .mapping = root.content else {
            throw ConfigError(
                "expected a mapping with a source: section at the top level, got \(root.summary)", at: root.location)
        }
        try ConfigTreeChecks.checkDuplicateKeys(root, path: "")
        for argument in overrides {
            try ConfigOverride(parsing: argument).apply(to: &root)
        }
        return try validator.validate(root)
    }

    /// The file's bytes, with the OS's reason when they cannot be read.
    private static func readFile(_ path: String) throws(ConfigError) -> [UInt8] {
        func failure(_ reason: String) -> ConfigError {
            ConfigError("cannot read config file \(path): \(reason)", at: nil)
        }
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
            // Checked while reading so that /dev/zero or a huge file is refused without filling memory.
            if bytes.count > maxFileSize {
                throw failure("larger than \(maxFileSize >> 20) MiB, which is too large for a config")
            }
        }
        return bytes
    }
}
