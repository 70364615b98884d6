#if canImport(DeviceCheck)
    import DeviceCheck
    public import Foundation

    /// ``DeviceCheckTokenProvider`` over `DCDevice.current`, for apps on Apple platforms.
    @available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
    public struct DeviceCheckDeviceTokenProvider: DeviceCheckTokenProvider {
        /// Creates a provider over `DCDevice.current`.
        public init() {}

        /// `DCDevice.current.isSupported`.
        public var isSupported: Bool { DCDevice.current.isSupported }

        /// `DCDevice.current.generateToken()`; every error comes out as a ``DeviceServiceError``.
        public func generateToken() async throws -> Data {
            do {
                return try await DCDevice.current.generateToken()
            } catch let error as DCError {
                throw DeviceServiceError(error)
            } catch {
                throw DeviceServiceError.unknown
            }
        }
    }
#endif
