import Foundation
import MediaFetchCLI
import MediaFetchCore
import Testing

/// The config's `ledger:` and `name:`: checked where they are written, and a password never shown.
@Suite("Config: ledger and name")
struct LedgerConfigTests {
    static func load(_ text: String, environment: [String: String] = [:]) throws(ConfigError) -> PipelineSpec {
        try ConfigLoader.load(
            text: text, path: "configs/previews.yaml", baseDirectory: URL(fileURLWithPath: "/configs"),
            environment: environment, registry: BundledPlugins.registry)
    }

    @Test func leftOutItIsSQLiteAndTheRunIsNamedAfterTheFile() throws {
        let spec = try Self.load("source: {use: itunes, term: x}")
        #expect(spec.ledger == nil)
        #expect(spec.runName == "previews")
        #expect(spec.describe().contains("ledger: sqlite in state"))
        #expect(spec.describe().contains("name: previews"))
    }

    @Test func aPasswordFromTheEnvironmentIsEncodedAndNeverShown() throws {
        let spec = try Self.load(
            """
            source: {use: itunes, term: x}
            name: big-crawl
            ledger: postgresql://fetch:${PGPASS}@db.example:5433/media?sslmode=disable
            """, environment: ["PGPASS": "p@ss/w0rd"])
        let ledger = try #require(spec.ledger)
        #expect(spec.runName == "big-crawl")
        #expect(ledger.scheme == "postgresql")
        #expect(ledger.uri == "postgresql://fetch:p%40ss%2Fw0rd@db.example:5433/media?sslmode=disable")
        #expect(ledger.redacted == "postgresql://fetch:***@db.example:5433/media?sslmode=disable")
        #expect(!spec.describe().contains("p%40ss"))
        #expect(!spec.describe().contains("p@ss"))
        #expect(spec.describe().contains("ledger: postgresql://fetch:***@db.example:5433/media"))
    }

    @Test func aPasswordParameterIsRedactedToo() {
        #expect(
            LedgerSelection.redact("postgres://u@h/db?application_name=x&password=secret&sslmode=require")
                == "postgres://u@h/db?application_name=x&password=***&sslmode=require")
        #expect(LedgerSelection.redact("host=h password=secret") == "***")
        #expect(
            LedgerSelection.redact("postgresql://u@h/db?sslpassword=key-pass&sslmode=verify-full")
                == "postgresql://u@h/db?sslpassword=***&sslmode=verify-full")
    }

    @Test func anUnknownSchemeNamesTheKeyAndTheKnownOnes() throws {
        let error = try #require(
            throws: ConfigError.self,
            performing: {
                try Self.load(
                    """
                    source: {use: itunes, term: x}
                    ledger: mysql://root:topsecret@h/db
                    """)
            })
        #expect(error.key == "ledger")
        #expect(error.location?.line == 2)
        #expect(error.message.contains("known: postgresql, postgres"))
        #expect(!error.description.contains("topsecret"))
    }

    @Test func textThatIsNoURIIsRefusedWithAnExample() throws {
        let error = try #require(
            throws: ConfigError.self, performing: { try Self.load("source: {use: itunes, term: x}\nledger: [a, b]") })
        #expect(error.key == "ledger")
        #expect(error.message.contains("postgresql://USER@HOST:PORT/DB"))
        let bare = try #require(
            throws: ConfigError.self, performing: { try Self.load("source: {use: itunes, term: x}\nledger: just-a-word-secret") })
        #expect(!bare.description.contains("just-a-word-secret"))
    }

    @Test func anEmptyNameIsRefused() throws {
        let error = try #require(throws: ConfigError.self, performing: { try Self.load("source: {use: itunes, term: x}\nname: \"\"") })
        #expect(error.key == "name")
        #expect(error.location?.line == 2)
    }
}
