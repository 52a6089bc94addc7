import Foundation

extension ExecCommand {
    /// Where a plugin's stderr lines go by default: this process's standard error, one line at a time.
    ///
    /// On a terminal the line is cleared first, so that a plugin's words do not run into a live progress line
    /// (which is drawn again with the next event).
    public static let standardError: @Sendable (String) -> Void = { line in
        let clear = isatty(STDERR_FILENO) == 1 ? "\r\u{1B}[2K" : ""
        // One write a line, so that lines from two plugins never mix.
        FileHandle.standardError.write(Data((clear + line + "\n").utf8))
    }
}
