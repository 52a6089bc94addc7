import MediaFetchCore

/// A command line taken apart: flags with values, bare flags, and positional words.
struct Arguments {
    private(set) var positional: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// - Parameters:
    ///   - valued: options that take a value (`--set K=V`, `--limit 20`, or `--limit=20`).
    ///   - bare: options that take none (`--json`).
    init(_ words: [String], valued: Set<String>, bare: Set<String>) throws(UsageError) {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--"), word != "--" else {
                positional.append(word)
                continue
            }
            var name = word
            var inlineValue: String?
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            if valued.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else if index < words.count {
                    values[name, default: []].append(words[index])
                    index += 1
                } else {
                    throw UsageError("\(name) needs a value")
                }
            } else if bare.contains(name), inlineValue == nil {
                flags.insert(name)
            } else {
                let known = (valued.union(bare)).sorted()
                var message = "unknown option \(name)"
                if let near = ConfigLoader.nearest(name, in: known) { message += " (did you mean \(near)?)" }
                throw UsageError(
                    message + "; this command takes: " + (known.isEmpty ? "no options" : known.joined(separator: ", ")))
            }
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }
}

/// The command line was wrong: exit code 2, and the message says how to get it right.
struct UsageError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
