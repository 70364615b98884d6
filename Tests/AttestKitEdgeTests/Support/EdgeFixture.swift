import AttestKit
import AttestKitTesting

/// The software Apple and the app whose devices the suite simulates.
enum EdgeFixture {
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitEdgeTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()
}
