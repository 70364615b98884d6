import NIOCore
import SQLiteNIO

/// Small helpers for running parameterised statements on one leased SQLite connection.
enum SQLiteStatements {
    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws. `IMMEDIATE` takes the write
    /// lock at once, so a transaction that reads before it writes cannot deadlock against another writer.
    static func transaction<Result>(
        _ connection: SQLiteConnection, _ body: () async throws -> Result
    ) async throws -> Result {
        _ = try await connection.query("BEGIN IMMEDIATE")
        do {
            let result = try await body()
            _ = try await connection.query("COMMIT")
            return result
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
    }

    /// SQLite's error class (`busy`, `corrupt`, `notADatabase`, …) for ``StoreError`` reasons; never its
    /// message, which may quote SQL.
    static func detail(_ error: any Error) -> String? {
        (error as? SQLiteError).map { "SQLite \($0.reason)" }
    }

    /// The number of rows the last statement on `connection` changed.
    static func changes(_ connection: SQLiteConnection) async throws -> Int {
        let rows = try await connection.query("SELECT changes() AS n")
        return rows.first?.column("n")?.integer ?? 0
    }
}

/// An SQLite row read by column name, with strict types: a column of another type is malformed.
struct SQLiteStoreRow: StoreRow {
    let row: SQLiteRow

    func integer(_ column: String) throws(StoreError) -> Int64? {
        switch row.column(column) {
        case .integer(let value): return Int64(value)
        case .null: return nil
        default: throw malformed(column)
        }
    }

    func bytes(_ column: String) throws(StoreError) -> [UInt8]? {
        switch row.column(column) {
        case .blob(let buffer): return Array(buffer.readableBytesView)
        case .null: return nil
        default: throw malformed(column)
        }
    }

    func text(_ column: String) throws(StoreError) -> String? {
        switch row.column(column) {
        case .text(let value): return value
        case .null: return nil
        default: throw malformed(column)
        }
    }

    private func malformed(_ column: String) -> StoreError {
        StoreError(.storageUnavailable, "the database holds a value of the wrong type in \(column)")
    }
}
