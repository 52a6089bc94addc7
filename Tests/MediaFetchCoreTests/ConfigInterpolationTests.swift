import Foundation
import MediaFetchCore
import Testing

@Suite("ConfigLoader: environment interpolation")
struct ConfigInterpolationTests {
    typealias F = ConfigFixtures

    @Test(arguments: [
        ("${ARTIST}", "jack johnson"),
        ("by ${ARTIST}!", "by jack johnson!"),
        ("${ARTIST}/${ARTIST}", "jack johnson/jack johnson"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${ARTIST:-fallback}", "jack johnson"),
        ("${MISSING:-}", ""),
        ("${EMPTY}", ""),
        ("$${ARTIST}", "${ARTIST}"),
        ("costs $5 and $$", "costs $5 and $$"),
        ("a$", "a$"),
    ])
    func references(value: String, expected: String) throws {
        let spec = try F.load(
            "source:\n  term: '\(value)'\n", environment: ["ARTIST": "jack johnson", "EMPTY": ""])
        #expect(spec.source.options.values["term"] == .string(expected))
    }

    @Test func interpolationHappensBeforeConversion() throws {
        let spec = try F.load(
            """
            source:
              use: ${SOURCE}
              term: x
              limit: ${LIMIT}
            transport:
              headers:
                ${KEY}: ${TOKEN}
            sink:
              path: ${OUT:-music}
            """,
            environment: ["SOURCE": "itunes", "LIMIT": "25", "TOKEN": "secret", "KEY": "ignored"])
        #expect(spec.source.options.values["limit"] == .integer(25))
        // Keys are not interpolated: only values are.
        #expect(spec.transport.options.values["headers"] == .map([.init("${KEY}", "secret")]))
        #expect(spec.sink.options.values["path"] == .path("/configs/demo/music"))
    }

    @Test func interpolatedValuesAreStillChecked() throws {
        let error = try #require(F.error("source:\n  term: x\n  limit: ${LIMIT}\n", environment: ["LIMIT": "900"]))
        #expect(error.location == F.at(3, 10))
        #expect(error.message == "limit 900 is out of range 1..200")
    }

    @Test func unsetVariableIsAnErrorAtTheScalar() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                sink:
                  path: "${HOME2}/music"
                """,
                environment: ["HOME": "/home/me"]))
        #expect(error.location == F.at(4, 9))
        #expect(error.key == "sink.path")
        #expect(error.message == "environment variable HOME2 is not set; set it or write ${HOME2:-default}")
    }

    @Test(arguments: [
        ("${UNCLOSED", "unclosed ${"),
        ("${}", "bad environment variable reference ${}"),
        ("${1ABC}", "bad environment variable reference ${1ABC}"),
        ("${A B}", "bad environment variable reference ${A B}"),
        ("${A:default}", "bad environment variable reference ${A:default}"),
    ])
    func malformedReferences(value: String, messageStart: String) throws {
        let error = try #require(F.error("source:\n  term: x\n  label: '\(value)'\n"))
        #expect(error.location == F.at(3, 10))
        #expect(error.key == "source.label")
        #expect(error.message.hasPrefix(messageStart))
        #expect(error.message.contains("$${"))
    }
}
