#if canImport(DeviceCheck)
    import DeviceCheck
    public import Foundation

    /// ``AppAttestProvider`` over `DCAppAttestService.shared`, for apps on Apple platforms.
    ///
    /// Kept deliberately thin: every call is forwarded, and every error comes out as a ``DeviceServiceError``
    /// (`DCError`s by their code, anything else as ``DeviceServiceError/unknown``).
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public struct DeviceAppAttestProvider: AppAttestProvider {
        /// Creates a provider over `DCAppAttestService.shared`.
        public init() {}

        /// `DCAppAttestService.shared.isSupported` (false in the Simulator and on older devices; true in some app
        /// extensions where the calls then fail with `featureUnsupported`).
        public var isSupported: Bool { DCAppAttestService.shared.isSupported }

        /// `DCAppAttestService.generateKey()`.
        public func generateKey() async throws -> String {
            try await Self.mapped { try await DCAppAttestService.shared.generateKey() }
        }

        /// `DCAppAttestService.attestKey(_:clientDataHash:)`.
        public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
            try await Self.mapped {
                try await DCAppAttestService.shared.attestKey(keyID, clientDataHash: clientDataHash)
            }
        }

        /// `DCAppAttestService.generateAssertion(_:clientDataHash:)`.
        public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
            try await Self.mapped {
                try await DCAppAttestService.shared.generateAssertion(keyID, clientDataHash: clientDataHash)
            }
        }

        static func mapped<Value>(_ body: () async throws -> Value) async throws(DeviceServiceError) -> Value {
            do {
                return try await body()
            } catch let error as DCError {
                throw DeviceServiceError(error)
            } catch {
                throw .unknown
            }
        }
    }

    @available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
    extension DeviceServiceError {
        /// Maps a `DCError` to its case.
        init(_ error: DCError) {
            switch error.code {
            case .invalidKey: self = .invalidKey
            case .invalidInput: self = .invalidInput
            case .serverUnavailable: self = .serverUnavailable
            case .featureUnsupported: self = .featureUnsupported
            default: self = .unknown
            }
        }
    }
#endif
