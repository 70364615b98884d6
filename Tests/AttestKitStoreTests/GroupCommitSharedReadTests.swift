import AttestKit
import AttestKitTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import AttestKitStore

/// Identical reads of one batch share one answer: many requests naming one key (known or not) cost one statement,
/// not one each in turn on the batch's connection, while writes keep their rounds and are never merged.
@Suite("Group commit: shared reads")
struct GroupCommitSharedReadTests {
    /// Combinable statements of `kind` on the targets named, read-only when `readOnly`, combined by a fake statement
    /// `COMBINED x,y` and alone `alone x` (as ``GroupCommitTests/combinable(_:)``).
    static func statements(
        _ targets: [String], kind: String = "read-key", readOnly: Bool = true
    ) -> [GroupCommit<String>.Write] {
        targets.map { target in
            GroupCommit<String>.Write(
                statement: SQLStatement("alone \(target)", [.text(target)]), end: nil,
                combinable: SQLCombinableWrite(
                    kind: kind, target: Array(target.utf8), row: [.text(target)], readOnly: readOnly,
                    combine: { rows in
                        SQLStatement(
                            "COMBINED "
                                + rows.compactMap { row in
                                    if case .text(let text)? = row.first { return text } else { return nil }
                                }.joined(separator: ","))
                    }))
        }
    }

    @Test("64 identical reads applied as one batch run one statement, and every caller gets the row")
    func identicalReadsRunOnce() async {
        let runs = NIOLockedValueBox<[String]>([])
        let outcomes = await GroupCommit<String>.apply(
            Self.statements(Array(repeating: "k", count: 64)),
            begin: { runs.withLockedValue { $0.append("BEGIN") } },
            run: { statement in
                runs.withLockedValue { $0.append(statement.sql) }
                return ["k"]
            },
            commit: { runs.withLockedValue { $0.append("COMMIT") } },
            rollback: { runs.withLockedValue { $0.append("ROLLBACK") } },
            target: { row in Array(row.utf8) })
        // One statement, without a transaction: a read alone.
        #expect(runs.withLockedValue { $0 } == ["alone k"])
        #expect(outcomes.count == 64)
        #expect(outcomes.allSatisfy { (try? $0.get()) == ["k"] })
    }

    @Test("identical reads of several keys: one combined statement, each caller gets its own key's row or none")
    func identicalReadsOfSeveralKeys() async {
        let targets = ["a", "b", "a", "NONE", "a", "b", "NONE"]
        let (outcomes, calls) = await GroupCommitTests.applyCombining(Self.statements(targets))
        #expect(calls == ["COMBINED a,b,NONE"])
        #expect(outcomes.map { try? $0.get() } == [["a"], ["b"], ["a"], [], ["a"], ["b"], []])
    }

    @Test("a failing read fails its identical reads with it, in one statement; other reads are answered")
    func identicalFailingReads() async {
        let (outcomes, calls) = await GroupCommitTests.applyCombining(Self.statements(["FAIL", "FAIL", "x", "FAIL"]))
        #expect(outcomes.map { try? $0.get() } == [nil, nil, ["x"], nil])
        for index in [0, 1, 3] {
            #expect(throws: StoreError.self) { try outcomes[index].get() }
        }
        #expect(calls == ["COMBINED FAIL,x", "BEGIN", "alone FAIL", "ROLLBACK", "alone x"])
    }

    @Test("identical writes are never merged: each runs, in order, in a round of its own")
    func identicalWritesKeepTheirRounds() async {
        let batch = Self.statements(["a", "a", "a"], kind: "advance", readOnly: false)
        #expect(GroupCommit.sharedReads(of: batch).followers.isEmpty)
        #expect(
            GroupCommit.units(Array(batch.indices), of: batch, combining: true) == [.single(0), .single(1), .single(2)])
        let (outcomes, calls) = await GroupCommitTests.applyCombining(batch)
        #expect(calls == ["BEGIN", "alone a", "alone a", "alone a", "COMMIT"])
        #expect(outcomes.map { try? $0.get() } == [["a"], ["a"], ["a"]])
    }

    @Test("a read after a write of its kind and target is not answered with the read before the write")
    func writeBetweenReadsSplitsThem() {
        let read = Self.statements(["a"], kind: "shared")
        let write = Self.statements(["a"], kind: "shared", readOnly: false)
        let batch = read + read + write + read + read
        let (leaders, followers) = GroupCommit.sharedReads(of: batch)
        #expect(leaders == [0, 2, 3])
        #expect(followers == [0: [1], 3: [4]])
    }

    @Test("reads differing in kind, values or statement are not shared")
    func differentReadsAreNotShared() {
        let plain = Self.statements(["a"])
        let otherKind = Self.statements(["a"], kind: "read-other")
        let otherValues = [
            GroupCommit<String>.Write(
                statement: SQLStatement("alone a", [.text("a")]), end: nil,
                combinable: SQLCombinableWrite(
                    kind: "read-key", target: Array("a".utf8), row: [.text("a"), .integer(1)], readOnly: true,
                    combine: { _ in SQLStatement("COMBINED") }))
        ]
        let otherStatement = [
            GroupCommit<String>.Write(
                statement: SQLStatement("alone a", [.text("b")]), end: nil, combinable: plain[0].combinable)
        ]
        let batch = plain + otherKind + otherValues + otherStatement + plain
        let (leaders, followers) = GroupCommit.sharedReads(of: batch)
        #expect(leaders == [0, 1, 2, 3])
        #expect(followers == [0: [4]])
        // A combinable statement is a write unless marked a read (as the executor's reads are).
        let write = SQLCombinableWrite(kind: "advance", target: [1], row: [], combine: { _ in SQLStatement("W") })
        #expect(!write.readOnly)
        #expect(write.reading().readOnly)
    }

    @Test(
        "PostgreSQL: 200 concurrent reads of one unknown key and 200 of one known key all answer correctly",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func concurrentIdenticalKeyReads() async throws {
        try await StoreBackend.postgres.withStore { store in
            let known = try await store.registerKey(TestKeys.registration(), now: TestKeys.t0)
            let unknown = try KeyID(bytes: Array(repeating: 0xCD, count: 32))
            let answers = try await withThrowingTaskGroup(of: (Bool, KeyRecord?).self) { group in
                for index in 0..<400 {
                    let isKnown = index.isMultiple(of: 2)
                    group.addTask {
                        (isKnown, try await store.keyWithoutReceipt(isKnown ? known.keyID : unknown))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 400)
            for (isKnown, record) in answers {
                if isKnown {
                    #expect(record?.keyID == known.keyID)
                    #expect(record?.counter == known.counter)
                    #expect(record?.receipt == nil)
                } else {
                    #expect(record == nil)
                }
            }
        }
    }
}
