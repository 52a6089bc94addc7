import MediaFetchCore
import Testing

@Suite("NameReserver")
struct NamingNameReserverTests {
    @Test func collisionsAreNumberedInOrder() {
        var reserver = NameReserver()
        #expect(reserver.reserve(path: "A/B/Title.m4a") == "A/B/Title.m4a")
        #expect(reserver.reserve(path: "A/B/Title.m4a") == "A/B/Title (2).m4a")
        #expect(reserver.reserve(path: "A/B/Title.m4a") == "A/B/Title (3).m4a")
        #expect(reserver.reserve(path: "A/B/Title.jpg") == "A/B/Title.jpg")
        #expect(reserver.reserve(path: "A/C/Title.m4a") == "A/C/Title.m4a")
    }

    @Test func comparedWithoutCaseAndNormalization() {
        var reserver = NameReserver()
        #expect(reserver.reserve(path: "Beyonc\u{E9}/Halo.m4a") == "Beyonc\u{E9}/Halo.m4a")
        // The directory keeps its first spelling; the file clashes on a case-insensitive filesystem.
        #expect(reserver.reserve(path: "BEYONCE\u{301}/halo.M4A") == "Beyonc\u{E9}/halo (2).M4A")
    }

    @Test func takenNumberedNamesAreSkipped() {
        var reserver = NameReserver()
        #expect(reserver.reserve(path: "x (2).m4a") == "x (2).m4a")
        #expect(reserver.reserve(path: "x.m4a") == "x.m4a")
        #expect(reserver.reserve(path: "x.m4a") == "x (3).m4a")
    }

    @Test func directoryClashingWithAFileIsNumbered() {
        var reserver = NameReserver()
        #expect(reserver.reserve(path: "A/B") == "A/B")
        #expect(reserver.reserve(path: "A/B/c.m4a") == "A/B (2)/c.m4a")
        #expect(reserver.reserve(path: "a/b/d.m4a") == "A/B (2)/d.m4a")
        // A file cannot take a directory's name either.
        #expect(reserver.reserve(path: "A") == "A (2)")
    }

    @Test func numberedNamesStayWithinBudget() {
        var reserver = NameReserver()
        let long = SafeName.component(String(repeating: "é", count: 300) + ".m4a", keepingExtension: true)
        #expect(reserver.reserve([long]) == [long])
        for number in 2...12 {
            let name = reserver.reserve([long])[0]
            #expect(name.utf8.count <= 255)
            #expect(name.hasSuffix(" (\(number)).m4a"))
        }
    }

    @Test func sameOrderSameNames() {
        let paths = (0..<300).map { "Artist \($0 % 3)/Album/Track \($0 % 7).m4a" }
        var first = NameReserver()
        var second = NameReserver()
        #expect(paths.map { first.reserve(path: $0) } == paths.map { second.reserve(path: $0) })
        var third = NameReserver()
        #expect(Set(paths.map { SafeName.collationKey(third.reserve(path: $0)) }).count == paths.count)
    }
}
