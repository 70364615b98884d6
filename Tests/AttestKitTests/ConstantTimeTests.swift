import Testing

@testable import AttestKit

/// The comparison of secret-dependent bytes: its array form agrees with the generic one on every input shape.
@Suite("Constant-time comparison")
struct ConstantTimeTests {
    @Test("equal arrays are equal; a different byte anywhere, a missing or an extra byte are not")
    func arrays() {
        let bytes: [UInt8] = Array(0..<32)
        #expect(ConstantTime.equal(bytes, bytes))
        #expect(ConstantTime.equal([UInt8](), []))
        #expect(!ConstantTime.equal([UInt8](), [0]))
        #expect(!ConstantTime.equal([0], [UInt8]()))
        #expect(!ConstantTime.equal(bytes, Array(bytes.dropLast())))
        #expect(!ConstantTime.equal(bytes + [0], bytes))
        for index in bytes.indices {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[index] ^= 1 << bit
                #expect(!ConstantTime.equal(bytes, flipped))
                #expect(!ConstantTime.equal(flipped, bytes))
            }
        }
    }

    @Test("the array form and the generic form give the same answer")
    func agree() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let left = (0..<Int.random(in: 0...4, using: &generator)).map { _ in UInt8.random(in: 0...1) }
            let right = (0..<Int.random(in: 0...4, using: &generator)).map { _ in UInt8.random(in: 0...1) }
            let generic = ConstantTime.equal(left[...], right[...])
            #expect(ConstantTime.equal(left, right) == generic)
            #expect(generic == (left == right))
        }
    }
}
