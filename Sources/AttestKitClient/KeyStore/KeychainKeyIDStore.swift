#if canImport(Security)
    import Foundation
    import Security

    /// A ``KeyIDStore`` in the Keychain, as a generic password readable after the first unlock on this device only
    /// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`): it is neither synced nor restored onto another device,
    /// where the Secure Enclave key it names would not exist.
    ///
    /// - **Shared between an App Clip and its full app**: give both the same ``accessGroup`` (a keychain access group
    ///   both are entitled to), so that the full app keeps the key the App Clip attested, as Apple suggests.
    /// - **One key per user account**: Apple asks not to reuse a key among several users of one device. Create the
    ///   store with ``init(service:userAccount:accessGroup:)`` for the signed-in user, and one
    ///   ``AppAttestManager`` over it; each user then has a key of their own.
    ///
    /// Every failure of the Keychain arrives as ``AttestKitClientError`` with code
    /// ``AttestKitClientError/Code/keyStore`` and the `OSStatus` in ``AttestKitClientError/osStatus``.
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public struct KeychainKeyIDStore: KeyIDStore {
        /// The Keychain service name.
        public let service: String
        /// The Keychain account name.
        public let account: String
        /// The keychain access group, or `nil` for the app's default group.
        public let accessGroup: String?

        /// Creates a store under `service` and `account`.
        /// - Parameters:
        ///   - service: The item's service.
        ///   - account: The item's account.
        ///   - accessGroup: A keychain access group shared with an App Clip or extension, or `nil`.
        public init(
            service: String = "AttestKitClient", account: String = "app-attest-key-id", accessGroup: String? = nil
        ) {
            self.service = service
            self.account = account
            self.accessGroup = accessGroup
        }

        /// Creates the store of one user account of the app: its own key, never another user's.
        /// - Parameters:
        ///   - service: The item's service.
        ///   - userAccount: A stable, non-secret identifier of the app's user (not an email address or a token).
        ///   - accessGroup: A keychain access group shared with an App Clip or extension, or `nil`.
        public init(service: String = "AttestKitClient", userAccount: String, accessGroup: String? = nil) {
            self.init(service: service, account: "app-attest-key-id." + userAccount, accessGroup: accessGroup)
        }

        /// `keychain:`, the access group, the service and the account.
        public var identity: String { "keychain:\(accessGroup ?? ""):\(service):\(account)" }

        private var query: [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account, kSecUseDataProtectionKeychain as String: true,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        /// The stored state, or `nil`.
        /// - Throws: ``AttestKitClientError/Code/keyStore``.
        public func load() throws -> KeyState? {
            var query = self.query
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data else {
                throw Self.failure(status, "reading the key state failed")
            }
            do {
                return try KeyState.decoded(data)
            } catch {
                throw AttestKitClientError(.keyStore, reason: "the stored key state is not readable")
            }
        }

        /// Stores `state`, replacing any previous one in place (never deleting first, so that a crash cannot lose
        /// an attested key).
        /// - Throws: ``AttestKitClientError/Code/keyStore``.
        public func save(_ state: KeyState) throws {
            let data: Data
            do {
                data = try state.encoded()
            } catch {
                throw AttestKitClientError(.keyStore, reason: "the key state cannot be encoded")
            }
            let attributes: [String: Any] = [
                kSecValueData as String: data,
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
            if status == errSecSuccess { return }
            guard status == errSecItemNotFound else { throw Self.failure(status, "updating the key state failed") }
            var item = query
            for (name, value) in attributes { item[name] = value }
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw Self.failure(added, "adding the key state failed") }
        }

        /// Deletes the item, if any.
        /// - Throws: ``AttestKitClientError/Code/keyStore``.
        public func remove() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw Self.failure(status, "deleting the key state failed")
            }
        }

        private static func failure(_ status: OSStatus, _ reason: String) -> AttestKitClientError {
            AttestKitClientError(.keyStore, osStatus: status, reason: "\(reason) (OSStatus \(status))")
        }
    }
#endif
