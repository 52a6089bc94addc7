import Foundation
import MediaFetchTesting

/// A throwaway certificate authority and a server certificate it signed for `127.0.0.1` and `localhost`, made
/// with the `openssl` CLI in a directory the caller owns and removes.
///
/// Nothing here is trusted by the system, so a client only accepts the server when told to trust ``caFile``.
struct TLSFixture {
    /// The authority's certificate: what a client is given as `caFile`.
    let caFile: URL
    /// The server's certificate and its key, for nginx's `ssl_certificate` and `ssl_certificate_key`.
    let certificateFile: URL
    let keyFile: URL

    /// The extensions of both certificates, so that nothing depends on the system's `openssl.cnf`.
    private static let config = """
        [req]
        distinguished_name = subject
        [subject]
        [authority]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        [server]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = IP:127.0.0.1, DNS:localhost
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid
        """

    /// - Throws: ``ServerError`` when the `openssl` CLI is missing or one of its steps fails.
    init(in directory: URL) async throws {
        let openssl = try Self.openssl()
        let file = { (name: String) in directory.appendingPathComponent(name).path }
        caFile = directory.appendingPathComponent("ca.pem")
        certificateFile = directory.appendingPathComponent("server.pem")
        keyFile = directory.appendingPathComponent("server.key")
        try Self.config.write(toFile: file("openssl.cnf"), atomically: true, encoding: .utf8)
        // P-256 keys: they take milliseconds to make, where RSA keys can take a good part of a second.
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509", "-config", file("openssl.cnf"), "-extensions", "authority"] + newKey
                + ["-keyout", file("ca.key"), "-out", caFile.path, "-days", "2", "-subj", "/CN=MediaFetch test CA"],
            ["req", "-new", "-config", file("openssl.cnf")] + newKey
                + ["-keyout", keyFile.path, "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"],
            [
                "x509", "-req", "-in", file("server.csr"), "-CA", caFile.path, "-CAkey", file("ca.key"),
                "-set_serial", "2", "-days", "2", "-extfile", file("openssl.cnf"), "-extensions", "server",
                "-out", certificateFile.path,
            ],
        ]
        for arguments in steps {
            let outcome = try await runProgram(openssl, arguments)
            guard outcome.status == 0 else {
                throw ServerError("openssl \(arguments.joined(separator: " ")) failed: \(outcome.output)")
            }
        }
    }

    /// The `openssl` program; missing, it is an error naming the package, never a skipped test.
    private static func openssl() throws -> URL {
        try RequiredProgram.openssl.locate()
    }
}
