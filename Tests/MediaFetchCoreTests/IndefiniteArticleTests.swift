import MediaFetchCore
import Testing

/// Messages that name a kind learned at run time get its article right.
struct IndefiniteArticleTests {
    @Test(arguments: [
        ("artist", "an artist"), ("album", "an album"), ("ebook", "an ebook"), ("audiobook", "an audiobook"),
        ("artwork", "an artwork"), ("episode", "an episode"), ("song", "a song"), ("podcast", "a podcast"),
        ("podcast-episode", "a podcast-episode"), ("feature-movie", "a feature-movie"), ("software", "a software"),
        ("tv-episode", "a tv-episode"), ("music-video", "a music-video"), ("preview", "a preview"),
        ("user", "a user"), ("unit", "a unit"), ("umbrella", "an umbrella"), ("hour", "an hour"),
        ("Interactive-booklet", "an Interactive-booklet"), ("", "a "),
    ])
    func theArticleFitsTheWord(word: String, expected: String) {
        #expect(IndefiniteArticle.before(word) == expected)
    }
}
