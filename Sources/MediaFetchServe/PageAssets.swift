/// The page: plain HTML, CSS and JavaScript served by the binary itself, with no build step and nothing
/// fetched from elsewhere.
enum PageAssets {
    struct File: Sendable {
        var type: String
        var text: String
    }

    static let files: [String: File] = [
        "/": File(type: "text/html; charset=utf-8", text: html),
        "/app.js": File(type: "text/javascript; charset=utf-8", text: script),
        "/app.css": File(type: "text/css; charset=utf-8", text: style),
    ]

    /// Scripts and styles only from this server; artwork from the catalog's hosts (http or https); audio only
    /// from this server's library.
    static let policy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http: https: data:; "
        + "media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let html = "<!doctype html><title>MediaFetch</title>"
    static let script = ""
    static let style = ""
}
