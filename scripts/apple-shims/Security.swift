// A test-only shim of the parts of Apple's Security framework (SecItem) that AttestKitClient's keychain store uses,
// written from Apple's documentation with its availability, so that scripts/apple-api-check can type-check the
// client's `#if canImport(Security)` code on Linux. Never linked into anything; the bodies are placeholders.
import Foundation

public typealias OSStatus = Int32
public typealias CFTypeRef = AnyObject
public typealias CFString = NSString
public typealias CFDictionary = NSDictionary

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let errSecSuccess: OSStatus = 0
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let errSecItemNotFound: OSStatus = -25300

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecClass: CFString = "class"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecClassGenericPassword: CFString = "genp"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecAttrService: CFString = "svce"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecAttrAccount: CFString = "acct"
@available(iOS 3.0, macOS 10.9, tvOS 9.0, watchOS 2.0, *) public let kSecAttrAccessGroup: CFString = "agrp"
@available(iOS 4.0, macOS 10.9, tvOS 9.0, watchOS 2.0, *) public let kSecAttrAccessible: CFString = "pdmn"
@available(iOS 4.0, macOS 10.9, tvOS 9.0, watchOS 2.0, *)
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public let kSecUseDataProtectionKeychain: CFString = "nleg"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecReturnData: CFString = "r_Data"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecMatchLimit: CFString = "m_Limit"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecMatchLimitOne: CFString = "m_LimitOne"
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *) public let kSecValueData: CFString = "v_Data"

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    errSecItemNotFound
}

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    errSecSuccess
}

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    errSecItemNotFound
}

@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { errSecSuccess }
