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

/// Runs parameterised statements on PostgreSQL connections.
enum PostgresStatement {
    /// Runs one statement on a leased connection and reads all its rows.
    @discardableResult
    static func run(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger
    ) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }

    /// The driver's query for `statement`: its SQL with its binds (`bytea`, `bigint`, `text`).
    static func query(_ statement: SQLStatement) -> PostgresQuery {
        var binds = PostgresBindings(capacity: statement.binds.count)
        for value in statement.binds {
            switch value {
            case .integer(let value): binds.append(value)
            case .bytes(let bytes): binds.append(bytes.map { ByteBuffer(bytes: $0) })
            case .text(let text): binds.append(text)
            }
        }
        return PostgresQuery(unsafeSQL: statement.sql, binds: binds)
    }
}
