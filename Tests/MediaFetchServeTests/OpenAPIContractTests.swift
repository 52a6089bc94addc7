import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// Documentation/serve-openapi.json held to the server: every documented operation answers, with a documented
/// status and a body of the documented shape, and nothing undocumented answers at all.
@Suite(.serialized) struct OpenAPIContractTests {
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Documentation/serve-openapi.json").standardized

    struct Document {
        let root: [String: Any]

        init() throws {
            let data = try Data(contentsOf: OpenAPIContractTests.documentURL)
            root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        var paths: [String: [String: Any]] { root["paths"] as? [String: [String: Any]] ?? [:] }

        func resolve(_ schema: [String: Any]) -> [String: Any] {
            guard let ref = schema["$ref"] as? String else { return schema }
            let name = ref.replacingOccurrences(of: "#/components/schemas/", with: "")
            let schemas = (root["components"] as? [String: Any])?["schemas"] as? [String: Any]
            return resolve(schemas?[name] as? [String: Any] ?? [:])
        }

        /// Every way `value` differs from `schema` (type, nullable, required, enum, items, properties).
        func problems(_ value: Any, _ schema: [String: Any], at path: String = "$") -> [String] {
            let schema = resolve(schema)
            if value is NSNull {
                return schema["nullable"] as? Bool == true ? [] : ["\(path): null where the schema allows none"]
            }
            var found: [String] = []
            switch schema["type"] as? String {
            case "object":
                guard let object = value as? [String: Any] else { return ["\(path): not an object"] }
                for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                    found.append("\(path).\(key): missing")
                }
                let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
                for (key, child) in object {
                    guard let property = properties[key] else {
                        if !properties.isEmpty { found.append("\(path).\(key): not documented") }
                        continue
                    }
                    found += problems(child, property, at: "\(path).\(key)")
                }
            case "array":
                guard let array = value as? [Any] else { return ["\(path): not an array"] }
                let items = schema["items"] as? [String: Any] ?? [:]
                for (index, element) in array.enumerated() {
                    found += problems(element, items, at: "\(path)[\(index)]")
                }
            case "string":
                guard let text = value as? String else { return ["\(path): not a string"] }
                if let allowed = schema["enum"] as? [String], !allowed.contains(text) {
                    found.append("\(path): \(text) is not one of \(allowed)")
                }
            case "integer":
                guard let number = value as? NSNumber, number.doubleValue.rounded() == number.doubleValue else {
                    return ["\(path): not an integer"]
                }
            case "number":
                guard value is NSNumber else { return ["\(path): not a number"] }
            case "boolean":
                guard value is Bool else { return ["\(path): not a boolean"] }
            default:
                break
            }
            return found
        }
    }

    /// Checks one answer against the operation's documented responses.
    func check(
        _ document: Document, _ operation: [String: Any], _ answer: ServeFixture.Response, _ label: String
    ) {
        let responses = operation["responses"] as? [String: [String: Any]] ?? [:]
        guard let response = responses[String(answer.status)] else {
            Issue.record("\(label): status \(answer.status) is not documented (\(responses.keys.sorted()))")
            return
        }
        guard let content = response["content"] as? [String: [String: Any]],
            let json = content["application/json"], let schema = json["schema"] as? [String: Any]
        else { return }
        #expect(answer.headers["content-type"] == "application/json", "\(label)")
        guard let value = answer.json else {
            Issue.record("\(label): the body is not JSON: \(answer.text.prefix(200))")
            return
        }
        let problems = document.problems(value, schema)
        #expect(problems.isEmpty, "\(label): \(problems)")
    }

    @Test func everyDocumentedOperationAnswersWithTheDocumentedShape() async throws {
        let document = try Document()
        let serve = try ServeFixture()
        try await serve.start()
        let results = await serve.search("love", limit: 2)
        let id = try #require(results.first?["id"] as? String)
        _ = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(id)"]}"#)
        let stored = try #require(await serve.waitFor(id) { $0["status"] as? String == "stored" })
        let location = try #require(stored["location"] as? String)
        let library = "/library/" + (location.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? location)

        // A valid call of each operation, and one with bad input where the operation takes any.
        let calls: [(String, String, String, String?)] = [
            ("/api/search", "get", "/api/search?term=love&limit=3&media=music&entity=song&country=US", nil),
            ("/api/search", "get", "/api/search?limit=999", nil),
            ("/api/downloads", "get", "/api/downloads", nil),
            ("/api/downloads", "post", "/api/downloads", #"{"ids": ["\#(id)"]}"#),
            ("/api/downloads", "post", "/api/downloads", #"{"ids": ["nope"]}"#),
            ("/api/downloads", "post", "/api/downloads", "{"),
            ("/api/downloads/{id}/pause", "post", "/api/downloads/\(id)/pause", "{}"),
            ("/api/downloads/{id}/pause", "post", "/api/downloads/nope/pause", "{}"),
            ("/api/downloads/{id}/resume", "post", "/api/downloads/\(id)/resume", "{}"),
            ("/api/downloads/{id}/cancel", "post", "/api/downloads/\(id)/cancel", "{}"),
            ("/api/session", "post", "/api/session", "{}"),
            ("/library/{path}", "get", library, nil),
            ("/library/{path}", "get", "/library/missing.m4a", nil),
        ]
        var covered = Set<String>()
        for (template, method, target, body) in calls {
            let operation = try #require(document.paths[template]?[method] as? [String: Any], "\(method) \(template)")
            covered.insert("\(method) \(template)")
            let answer = await serve.request(method.uppercased(), target, body: body)
            check(document, operation, answer, "\(method.uppercased()) \(target)")
            let unauthorized = await serve.request(
                method.uppercased(), target, body: body, headers: ["Authorization": ""])
            check(document, operation, unauthorized, "\(method.uppercased()) \(target) without the token")
        }
        // The event stream: its documented type, and a snapshot first.
        let events = try #require(document.paths["/api/events"]?["get"] as? [String: Any])
        covered.insert("get /api/events")
        #expect((events["responses"] as? [String: Any])?["200"] != nil)
        let stream = await serve.events { $0.contains("event: snapshot") }
        #expect(stream.contains("event: snapshot"))

        let documented = Set(document.paths.flatMap { path, operations in operations.keys.map { "\($0) \(path)" } })
        #expect(covered == documented, "operations the test does not call: \(documented.subtracting(covered))")

        // Nothing undocumented answers: other paths are 404, other methods 405.
        for target in [
            "/api", "/api/", "/api/downloads/\(id)", "/api/downloads/\(id)/delete", "/api/openapi.json",
            "/api/search/x", "/admin", "/library", "/api/downloads/\(id)/pause/x",
        ] {
            let answer = await serve.request("GET", target)
            #expect(answer.status == 404, "GET \(target) answered \(answer.status)")
        }
        for (method, target) in [
            ("DELETE", "/api/downloads"), ("PUT", "/api/downloads"), ("POST", "/api/search"),
            ("GET", "/api/downloads/\(id)/pause"), ("POST", "/api/events"), ("DELETE", library), ("POST", "/"),
        ] {
            let answer = await serve.request(method, target, body: method == "GET" ? nil : "{}")
            #expect(answer.status == 405 || answer.status == 404, "\(method) \(target) answered \(answer.status)")
        }
        // The pages the document lists (outside the API) are served.
        for page in document.root["x-pages"] as? [String] ?? [] {
            #expect(await serve.request("GET", page).status == 200, "\(page)")
        }
        await serve.stop()
    }
}
