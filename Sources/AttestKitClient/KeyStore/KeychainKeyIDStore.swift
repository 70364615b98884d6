#if canImport(Security)
    import Foundation
    import Security

    /// A ``KeyIDStore`` in the Keychain, as a generic password readable after the first unlock on this device only
    /// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`): it is neither synced nor restored onto another device,
    /// where the Secure Enclave key it names would not exist.
    public struct KeychainKeyIDStore: KeyIDStore {
        /// The Keychain service name.
        public let service: String
        /// The Keychain account name.
        public let account: String

        /// Creates a store under `service` and `account`.
        public init(service: String = "AttestKitClient", account: String = "app-attest-key-id") {
            self.service = service
            self.account = account
        }

        /// A Keychain call failed with `status`.
        public struct KeychainError: Error, Sendable, Hashable {
            /// The `OSStatus`.
            public let status: Int32
        }

        private var query: [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }

        /// The stored key identifier, or `nil`.
        public func load() throws -> String? {
            var query = self.query
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
            return String(decoding: data, as: UTF8.self)
        }

        /// Stores `keyID`, replacing any previous one.
        public func save(_ keyID: String) throws {
            try remove()
            var item = query
            item[kSecValueData as String] = Data(keyID.utf8)
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let status = SecItemAdd(item as CFDictionary, nil)
            guard status == errSecSuccess else { throw KeychainError(status: status) }
        }

        /// Deletes the item, if any.
        public func remove() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
        }
    }
#endif
