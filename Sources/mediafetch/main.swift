import Foundation
import MediaFetchCLI

exit(await CLI.main(Array(CommandLine.arguments.dropFirst())))
