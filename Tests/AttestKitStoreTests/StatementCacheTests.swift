import AttestKit
import Testing

@testable import AttestKitStore

/// What the store keeps per process so that it does not redo work per request: the combined counter advance's text
/// by shape, and the App IDs of returned rows by their text. Both must give exactly what was computed before.
@Suite("Statement and App ID caches")
struct StatementCacheTests {
    @Test func counterAdvanceTextNumbersEveryRowsParametersInOrder() {
        let text = CounterAdvanceText.text(rows: 2, table: "keys", dialect: .sqlite)
        #expect(text.contains("AS (VALUES (?1, ?2, ?3, ?4), (?5, ?6, ?7, ?8))\n"))
        #expect(text.contains("UPDATE keys AS keys SET counter = batch.batch_counter"))
        // Every column but the receipt's bytes, which the request path never reads.
        #expect(text.hasSuffix("RETURNING \(StoreColumns.keyWithoutReceipt(.sqlite))"))
        #expect(text.contains(", NULL AS receipt, "))
        let postgres = CounterAdvanceText.text(rows: 3, table: #""bench"."keys""#, dialect: .postgres)
        #expect(postgres.contains("AS (VALUES ($1, $2, $3, $4), ($5, $6, $7, $8), ($9, $10, $11, $12))\n"))
        #expect(postgres.contains(#"UPDATE "bench"."keys" AS keys"#))
        #expect(postgres.hasSuffix("RETURNING \(StoreColumns.keyWithoutReceipt(.postgres))"))
        #expect(postgres.contains(", NULL::bytea AS receipt, "))
    }

    @Test func counterAdvanceTextIsKeptPerShapeNeverAcrossShapes() {
        // Asked in every order, each shape keeps its own text: one cached for another would bind the wrong rows.
        let shapes: [(Int, String, SQLDialect)] = [
            (1, "keys", .sqlite), (2, "keys", .sqlite), (1, "keys", .postgres), (1, "other.keys", .sqlite),
        ]
        let first = shapes.map { CounterAdvanceText.text(rows: $0.0, table: $0.1, dialect: $0.2) }
        #expect(Set(first).count == shapes.count)
        let again = shapes.reversed().map { CounterAdvanceText.text(rows: $0.0, table: $0.1, dialect: $0.2) }
        #expect(Array(again.reversed()) == first)
        for count in 1...300 {
            let text = CounterAdvanceText.text(rows: count, table: "keys", dialect: .sqlite)
            #expect(text.contains("(?\(4 * count - 3), ?\(4 * count - 2), ?\(4 * count - 1), ?\(4 * count)))\n"))
            #expect(!text.contains("?\(4 * count + 1)"))
        }
    }

    @Test func storedAppIDsParseAsAppIDDoesAndRefuseWhatItRefuses() throws {
        let text = "ABCDE12345.com.example.cache"
        let parsed = try StoredAppID.parse(text)
        #expect(parsed == (try AppID(text)))
        #expect(try StoredAppID.parse(text) == parsed)
        #expect(parsed.rpIDHash == (try AppID(text)).rpIDHash)
        for bad in ["", "ABCDE12345", "ABCDE12345.", ".com.example.cache", "ABCDE12345.com example"] {
            #expect(throws: AttestKitError.self) { try StoredAppID.parse(bad) }
            #expect(throws: AttestKitError.self) { try StoredAppID.parse(bad) }
        }
    }

    @Test func nonASCIIAppIDsAreNeverTakenForACanonicallyEquivalentOne() throws {
        // "é" precomposed and decomposed: equal as Swift strings, different bytes, so different rpIdHash.
        let composed = "ABCDE12345.com.example.caf\u{E9}"
        let decomposed = "ABCDE12345.com.example.cafe\u{301}"
        #expect(composed == decomposed)
        let first = try StoredAppID.parse(composed)
        let second = try StoredAppID.parse(decomposed)
        #expect(first.rpIDHash == (try AppID(composed)).rpIDHash)
        #expect(second.rpIDHash == (try AppID(decomposed)).rpIDHash)
        #expect(first.rpIDHash != second.rpIDHash)
    }
}
