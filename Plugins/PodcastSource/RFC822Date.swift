import Foundation

/// Reads a feed's date as feeds really write it: RFC 822 (`Tue, 17 Jun 2025 09:29:22 GMT`) and its common
/// corruptions, and the ISO 8601 of Atom and of feeds that put it in `pubDate`.
///
/// Accepted beyond the standard: no weekday, or a wrong one (it is ignored); a day of one digit; a full month name
/// (`September`, `Sept`); a two-digit year; no seconds, or an hour of one digit; a zone as `+0000`, `-0000`,
/// `+05:30`, `GMT`, `UT`, `UTC`, `Z`, a North American name (`EST`, `PDT`, ...), or none at all (taken as UTC);
/// a comment after the zone (`+0000 (UTC)`).
enum RFC822Date {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    /// Zone names and their offsets in minutes east of UTC (RFC 822 section 5, and the military zones' Z).
    private static let zones: [String: Int] = [
        "gmt": 0, "ut": 0, "utc": 0, "z": 0, "est": -300, "edt": -240, "cst": -360, "cdt": -300, "mst": -420,
        "mdt": -360, "pst": -480, "pdt": -420, "bst": 60, "cet": 60, "cest": 120,
    ]

    /// The moment `text` names, or nil when it names none.
    static func parse(_ text: String) -> Date? {
        let trimmed = FeedParser.trimmed(text)
        guard !trimmed.isEmpty else { return nil }
        if let first = trimmed.unicodeScalars.first, ("0"..."9").contains(first),
            trimmed.count >= 10, trimmed.unicodeScalars.dropFirst(4).first == "-"
        {
            return iso8601(trimmed)
        }
        return rfc822(trimmed)
    }

    private static func rfc822(_ text: String) -> Date? {
        // A comment such as "(UTC)" says nothing the zone does not.
        var cleaned = text
        if let open = cleaned.firstIndex(of: "(") { cleaned = String(cleaned[..<open]) }
        let tokens = cleaned.split { $0 == " " || $0 == "," || $0 == "\t" }.map(String.init)
        var numbers: [String] = []
        var month: Int?
        var time: [Int]?
        var offset: Int?
        for token in tokens {
            let lowered = token.lowercased()
            if token.contains(":"), time == nil, let parsed = clock(token) {
                time = parsed
            } else if token.allSatisfy(\.isNumber) {
                numbers.append(token)
            } else if (token.hasPrefix("+") || token.hasPrefix("-")), time != nil, let minutes = zoneOffset(token) {
                offset = minutes
            } else if let minutes = zones[String(lowered.filter(\.isLetter))], time != nil {
                offset = minutes
            } else if month == nil, lowered.count >= 3,
                let index = months.firstIndex(of: String(lowered.prefix(3))),
                lowered.allSatisfy(\.isLetter)
                    || lowered.hasSuffix(".")
            {
                month = index + 1
            } else if lowered.count >= 3, days.contains(String(lowered.prefix(3))) {
                continue
            } else {
                return nil
            }
        }
        guard let month, numbers.count == 2 else { return nil }
        // Day then year, as RFC 822 has it; a four-digit number is the year wherever it stands.
        var (dayText, yearText) = (numbers[0], numbers[1])
        if dayText.count == 4 { swap(&dayText, &yearText) }
        guard let day = Int(dayText), var year = Int(yearText), (1...31).contains(day) else { return nil }
        if yearText.count <= 2 { year += year < 50 ? 2000 : 1900 }
        let (hour, minute, second) = time.map { ($0[0], $0[1], $0.count > 2 ? $0[2] : 0) } ?? (0, 0, 0)
        guard day <= daysIn(month: month, year: year) else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds - (offset ?? 0) * 60))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's days_from_civil):
    /// arithmetic, where a Calendar cost more than the rest of reading a feed's date.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `09:29:22` or `9:29` as hour, minute (and second), within range.
    private static func clock(_ token: String) -> [Int]? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count) else { return nil }
        var values: [Int] = []
        for part in parts {
            // Fractions of a second are dropped.
            let whole = part.split(separator: ".").first.map(String.init) ?? ""
            guard !whole.isEmpty, whole.count <= 2, let value = Int(whole) else { return nil }
            values.append(value)
        }
        guard values[0] < 24, values[1] < 60, values.count < 3 || values[2] <= 60 else { return nil }
        return values
    }

    /// `+0530`, `-0000`, `+05:30`, `+5` as minutes east of UTC.
    private static func zoneOffset(_ token: String) -> Int? {
        let sign = token.hasPrefix("-") ? -1 : 1
        let digits = token.dropFirst().filter { $0 != ":" }
        guard !digits.isEmpty, digits.count <= 4, digits.allSatisfy(\.isNumber), let value = Int(digits) else {
            return nil
        }
        let (hours, minutes) = digits.count <= 2 ? (value, 0) : (value / 100, value % 100)
        guard hours <= 14, minutes < 60 else { return nil }
        return sign * (hours * 60 + minutes)
    }

    /// RFC 3339 / ISO 8601, with or without fractional seconds, or a bare date.
    private static func iso8601(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date
        }
        // A zone-less date and time, or a bare date: UTC.
        let head = text.prefix(19)
        if head.count == 19, let date = try? Date(head + "Z", strategy: .iso8601) { return date }
        return try? Date(String(text.prefix(10)), strategy: Date.ISO8601FormatStyle().year().month().day())
    }
}
