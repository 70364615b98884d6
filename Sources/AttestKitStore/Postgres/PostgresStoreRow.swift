import Logging
import NIOCore
import PostgresNIO

/// A PostgreSQL row read by column name; a missing column or a value of another type is malformed.
struct PostgresStoreRow: StoreRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row.makeRandomAccess()
    }

    func integer(_ column: String) throws(StoreError) -> Int64? {
        try decode(column, Int64?.self)
    }

    func bytes(_ column: String) throws(StoreError) -> [UInt8]? {
        try decode(column, ByteBuffer?.self).map { Array($0.readableBytesView) }
    }

    func text(_ column: String) throws(StoreError) -> String? {
        try decode(column, String?.self)
    }

    private func decode<Value: PostgresDecodable>(_ column: String, _ type: Value.Type) throws(StoreError) -> Value {
        guard row.contains(column) else {
            throw StoreError(.storageUnavailable, "the database returned no column \(column)")
        }
        do {
            return try row[column].decode(type)
        } catch {
            throw StoreError(.storageUnavailable, "the database holds a value of the wrong type in \(column)")
        }
    }
}

/// Builds a parameterised query: SQL text with `$n` placeholders and its binds, appended in order.
struct PostgresStatement {
    private(set) var binds = PostgresBindings()

    /// Appends a bytea bind.
    mutating func bytes(_ value: [UInt8]?) {
        binds.append(value.map { ByteBuffer(bytes: $0) })
    }

    /// Appends a bigint bind.
    mutating func int64(_ value: Int64?) {
        binds.append(value)
    }

    /// Appends a text bind.
    mutating func text(_ value: String?) {
        binds.append(value)
    }

    /// Runs one statement on a leased connection and reads all its rows.
    @discardableResult
    static func run(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger
    ) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }

    /// The query for `sql` with the binds appended so far.
    func query(_ sql: String) -> PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
