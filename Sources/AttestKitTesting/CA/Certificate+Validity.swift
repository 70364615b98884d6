import Foundation
import X509

extension Certificate {
    /// The certificate's window of validity as a range, for issuing another certificate within it. A certificate
    /// that ends before it begins (one from an edited state file) is refused rather than trapped on.
    /// - Throws: ``SoftwareAppleError/Code/invalidState``.
    func validityRange() throws(SoftwareAppleError) -> ClosedRange<Date> {
        guard notValidBefore <= notValidAfter else {
            throw SoftwareAppleError(.invalidState, "a certificate of the simulator's state ends before it begins")
        }
        return notValidBefore...notValidAfter
    }
}
