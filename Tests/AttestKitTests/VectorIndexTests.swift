import Testing

@Suite struct VectorIndexTests {
    @Test func allVectorsLoad() {
        #expect(TestVectors.all.count == 143)
        #expect(TestVectors.kind("attestation").count == 74)
        #expect(TestVectors.kind("assertion").count == 36)
        #expect(TestVectors.kind("receipt").count == 33)
    }
}
