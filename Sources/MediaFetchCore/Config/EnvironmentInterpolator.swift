/// Replaces `${VAR}` and `${VAR:-default}` in config values with environment variables.
///
/// `$${` is a literal `${`; a `$` not followed by `{` is left alone, so prices and regexes need no escaping.
struct EnvironmentInterpolator: Sendable {
    var environment: [String: String]

    /// `text` with every reference replaced.
    /// - Throws: ``ConfigError`` at `location` for an unset variable without a default, an unclosed `${`
    ///   or a bad variable name.
    /// - Parameter escape: applied to each substituted value (a URI's percent-encoding), not to the text around it.
    func interpolate(
        _ text: String, at location: SourceLocation, key: String, escape: (String) -> String = { $0 }
    ) throws(ConfigError) -> String {
        // Most values hold no `$`; they come back untouched and cheaply.
        guard text.unicodeScalars.contains("$") else { return text }
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "$", index + 2 < scalars.count, scalars[index + 1] == "$", scalars[index + 2] == "{" {
                out.append(contentsOf: "${".unicodeScalars)
                index += 3
                continue
            }
            guard scalar == "$", index + 1 < scalars.count, scalars[index + 1] == "{" else {
                out.append(scalar)
                index += 1
                continue
            }
            guard let close = scalars[(index + 2)...].firstIndex(of: "}") else {
                throw ConfigError(
                    "unclosed ${ in \(ConfigText.quote(text)); close it with }, or write $${ for a literal ${",
                    at: location, key: key)
            }
            let reference = String(String.UnicodeScalarView(scalars[(index + 2)..<close]))
            out.append(contentsOf: escape(try resolve(reference, at: location, key: key)).unicodeScalars)
            index = close + 1
        }
        return String(out)
    }

    /// The value of one `${...}` reference's inside: `NAME` or `NAME:-default`.
    private func resolve(_ reference: String, at location: SourceLocation, key: String) throws(ConfigError) -> String {
        let name: String
        let fallback: String?
        if let separator = reference.range(of: ":-") {
            name = String(reference[..<separator.lowerBound])
            fallback = String(reference[separator.upperBound...])
        } else {
            name = reference
            fallback = nil
        }
        guard Self.isValidName(name) else {
            throw ConfigError(
                "bad environment variable reference ${\(reference)}: a name is letters, digits and _, not starting "
                    + "with a digit, optionally followed by :-default; write $${ for a literal ${",
                at: location, key: key)
        }
        let value = environment[name]
        if let fallback {
            // `:-` means "unset or empty", as in the shell.
            if let value, !value.isEmpty { return value }
            return fallback
        }
        guard let value else {
            throw ConfigError(
                "environment variable \(name) is not set; set it or write ${\(name):-default}", at: location, key: key)
        }
        return value
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { scalar in
            scalar == "_" || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || ("0"..."9").contains(scalar)
        }
    }
}
