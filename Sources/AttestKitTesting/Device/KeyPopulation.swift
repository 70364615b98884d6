package import AttestKit
import Crypto

/// The keys a population benchmark (`attestkit load --population`) can sign with: `count` App Attest keys of one
/// app, drawn from a seed, whose rows a benchmark writes straight into a store (no attestation), and the assertions
/// they make.
///
/// Unlike ``SimulatedDevice``, which keeps a key store for any scenario, it holds only what a benchmark needs:
/// an array of keys, found by index in constant time, with counters the caller keeps. **Test keys only.**
package struct KeyPopulation: Sendable {
    /// The app the keys belong to.
    package let appID: AppID
    /// The identifier of every key, by index.
    package let keyIDs: [KeyID]
    /// The public key of every key (65-byte X9.63), by index.
    package let publicKeys: [[UInt8]]
    private let privateKeys: [P256.Signing.PrivateKey]

    /// Draws `count` keys from `seed` (the same seed gives the same keys).
    package init(count: Int, appID: AppID, seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var privateKeys: [P256.Signing.PrivateKey] = []
        privateKeys.reserveCapacity(count)
        for _ in 0..<count {
            switch SigningKey.drawn(.p256, using: &generator) {
            case .p256(let key): privateKeys.append(key)
            case .p384: privateKeys.append(P256.Signing.PrivateKey())
            }
        }
        self.appID = appID
        self.privateKeys = privateKeys
        self.keyIDs = privateKeys.map { KeyID(publicKey: $0.publicKey) }
        self.publicKeys = privateKeys.map { Array($0.publicKey.x963Representation) }
    }

    /// How many keys the population holds.
    package var count: Int { privateKeys.count }

    /// An assertion of key `index` with `counter` over `clientDataHash`, as ``SimulatedDevice`` makes one.
    /// - Throws: ``SoftwareAppleError`` when signing fails.
    package func assertion(
        of index: Int, counter: UInt32, clientDataHash: [UInt8]
    ) throws(SoftwareAppleError) -> [UInt8] {
        let authData = AppAttestEncoder.header(rpIDHash: appID.rpIDHash, counter: counter)
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        let key = privateKeys[index]
        let signature = try SigningIdentity.signing("an assertion signature") {
            Array(try key.signature(for: nonce).derRepresentation)
        }
        return AppAttestEncoder.assertionObject(signature: signature, authData: authData)
    }
}
