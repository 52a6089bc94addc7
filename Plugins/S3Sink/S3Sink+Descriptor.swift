import Foundation
import MediaFetchCore

extension S3Sink {
    /// `use: s3`.
    public static let descriptor = SinkDescriptor(
        info: PluginInfo(
            kind: .sink,
            name: "s3",
            summary: "Stores files as objects in an S3 bucket (AWS or any S3-compatible store: SeaweedFS, MinIO, ...), "
                + "each whole or not at all, never overwriting a key.",
            options: [
                OptionSpec(
                    "endpoint", .url, defaultText: "AWS for region",
                    doc: "The store's URL, scheme, host and port (http://127.0.0.1:8333); left out, AWS: "
                        + "https://s3.<region>.amazonaws.com."),
                OptionSpec("bucket", .string, required: true, doc: "The bucket objects go into."),
                OptionSpec(
                    "region", .string, default: .string(S3Configuration.defaultRegion),
                    doc: "The region requests are signed for (Signature V4)."),
                OptionSpec(
                    "prefix", .string, default: .string(""),
                    doc: "Keys start with this folder (music/previews); the manifest and playlist go there too."),
                OptionSpec(
                    "layout", .string, default: .string(LayoutTemplate.defaultLayout),
                    doc: "Each object's key below the prefix, as for the directory sink: placeholders "
                        + LayoutTemplate.placeholderList + "; every part made safe the same way, clashes numbered "
                        + "\" (2)\" in the order items are found."),
                OptionSpec(
                    "access-key-id", .string, defaultText: "AWS_ACCESS_KEY_ID", secret: true,
                    doc: "The access key id; secret like the key itself, never printed. ${VAR} reads it from the "
                        + "environment."),
                OptionSpec(
                    "secret-access-key", .string, defaultText: "AWS_SECRET_ACCESS_KEY", secret: true,
                    doc: "The secret access key; never printed, logged or recorded."),
                OptionSpec(
                    "session-token", .string, defaultText: "AWS_SESSION_TOKEN", secret: true,
                    doc: "The session token of temporary credentials; never printed."),
                OptionSpec(
                    "addressing", .choice(S3Configuration.Addressing.allCases.map(\.rawValue)),
                    defaultText: "path for a custom endpoint, virtual-host for AWS",
                    doc: "path: endpoint/bucket/key; virtual-host: bucket.endpoint/key."),
                OptionSpec(
                    "part-size", .byteSize, default: .integer(Int(S3Configuration.defaultPartSize)),
                    defaultText: "64MiB",
                    doc: "Files larger than this go up as a multipart upload of parts this size (at least 5MiB; "
                        + "raised for files above 10,000 parts). Parts are ranges of the file, which the curl "
                        + "transport streams; the foundation transport sends at most 8MiB, and parts are cut to fit."),
                OptionSpec(
                    "part-concurrency", .integer(1...32), default: .integer(4),
                    doc: "Parts of one multipart upload sent at once."),
                OptionSpec(
                    "storage-class", .string,
                    doc: "The objects' storage class (STANDARD, STANDARD_IA, ...); the bucket's default when left "
                        + "out."),
                OptionSpec(
                    "create-bucket", .bool, default: .bool(false),
                    doc: "Create the bucket when it does not exist; otherwise a missing bucket stops the run before "
                        + "anything is fetched."),
            ] + CollectionOptions.specs(defaults: collectionDefaults)
        ),
        make: { options, context in
            guard let transport = context.transport else {
                throw options.error(nil, "the s3 sink needs the run's transport, and this caller gave none")
            }
            return S3Sink(
                configuration: try S3Configuration(options: options, environment: ProcessInfo.processInfo.environment),
                transport: transport, policy: context.downloadPolicy,
                journal: UploadJournal(path: context.stateDirectory.appendingPathComponent(S3Sink.journalName).path))
        }
    )
}
