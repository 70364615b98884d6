import AttestKit

/// The text of the combined counter advance (``SQLStore/advancingCounters(_:)``).
///
/// On SQLite the statement's text depends on the table and how many rows it advances; the group commit sends one for
/// every batch, so building it anew (a parameter list per row, joined) was a cost of every request. Those texts are
/// kept by that shape in a bounded cache: a shape not in it is written exactly as before. PostgreSQL's takes one
/// array per column, so its one text serves every batch and stays prepared (``postgres(table:)``).
enum CounterAdvanceText {
    private struct Shape: Hashable, Sendable {
        let dialect: SQLDialect
        let table: String
        let rows: Int
    }

    private static let texts = BoundedCache<Shape, String>(capacity: 1_024)

    /// SQLite's statement for `rows` rows of four values each (key identifier, new counter, time, oldest last use),
    /// in order, on `table`.
    static func text(rows: Int, table: String, dialect: SQLDialect) -> String {
        let shape = Shape(dialect: dialect, table: table, rows: rows)
        if let text = texts[shape] { return text }
        let text = write(shape)
        texts.insert(text, for: shape)
        return text
    }

    /// PostgreSQL's statement, for any number of rows: the four values of each row are the elements at one index of
    /// four arrays (`$1` key identifiers, `$2` new counters, `$3` times, `$4` oldest last uses), so one prepared
    /// statement serves every batch (``SQLPreparedStatement/advanceCounters``).
    static func postgres(table: String) -> String {
        update(
            table: table, dialect: .postgres,
            from: """
                unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bigint[]) \
                AS batch(batch_key, batch_counter, batch_at, batch_used_since)
                """)
    }

    /// SQLite's statement for a shape: the rows as a `VALUES` list.
    private static func write(_ shape: Shape) -> String {
        let values = (0..<shape.rows).map { row in
            "(" + (4 * row + 1...4 * row + 4).map(shape.dialect.parameter).joined(separator: ", ") + ")"
        }
        return "WITH batch(batch_key, batch_counter, batch_at, batch_used_since) AS (VALUES "
            + values.joined(separator: ", ") + ")\n"
            + update(table: shape.table, dialect: shape.dialect, from: "batch")
    }

    /// The compare-and-set of counter advances, one row of `batch` per key: each key whose stored counter is lower,
    /// which is not revoked and whose last use (its last assertion, or its registration) is not older than the row's
    /// oldest last use takes its new counter and the time as its last assertion; the keys changed are returned whole
    /// but for the receipt's bytes.
    private static func update(table: String, dialect: SQLDialect, from batch: String) -> String {
        """
        UPDATE \(table) AS keys SET counter = batch.batch_counter,
            last_assertion_at_ms = batch.batch_at
        FROM \(batch)
        WHERE keys.key_id = batch.batch_key AND keys.counter < batch.batch_counter AND keys.revoked_at_ms IS NULL
            AND COALESCE(keys.last_assertion_at_ms, keys.created_at_ms) >= batch.batch_used_since
        RETURNING \(StoreColumns.keyWithoutReceipt(dialect))
        """
    }
}
