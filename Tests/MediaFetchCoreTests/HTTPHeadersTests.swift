import MediaFetchCore
import Testing

/// Header fields are found whatever the case of the name asked for, and only by their own name.
@Suite struct HTTPHeadersTests {
    @Test func namesAreFoundWithoutRegardToCase() {
        let headers: HTTPHeaders = ["Content-Type": "audio/mp4", "ETag": "\"a1\"", "content-length": "10"]
        #expect(headers["content-type"] == "audio/mp4")
        #expect(headers["CONTENT-TYPE"] == "audio/mp4")
        #expect(headers["etag"] == "\"a1\"")
        #expect(headers["Content-Length"] == "10")
    }

    @Test func onlyTheSameNameMatches() {
        let headers: HTTPHeaders = ["Content-Type": "audio/mp4", "X-A": "1", "X-[": "2"]
        #expect(headers["Content-Typf"] == nil)
        #expect(headers["Content-Typ"] == nil)
        #expect(headers["Content_Type"] == nil)
        // `[` and `{` differ only in the bit that tells a letter's case: they are not the same character.
        #expect(headers["x-{"] == nil)
        #expect(headers["X-["] == "2")
        #expect(headers["x-a"] == "1")
    }

    @Test func namesBeyondASCIIFollowUnicodeCase() {
        let headers: HTTPHeaders = ["Größe": "1", "ÄRGER": "2"]
        #expect(headers["größe"] == "1")
        #expect(headers["ärger"] == "2")
        #expect(headers["Grösse"] == nil)
        // An ASCII letter that differs before the first byte beyond ASCII.
        #expect(headers["Gräße"] == nil)
        #expect(headers["Hröße"] == nil)
    }
}
