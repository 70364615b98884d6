import AttestKit
import Testing

@Suite("Bundle versions and validation categories")
struct BundleVersionTests {
    @Test(
        "bundle versions order as Apple orders CFBundleVersion",
        arguments: [
            ("2", "2.0", false), ("2.9", "2.10", true), ("1.01", "1.1", false), ("1.0.9", "1.1", true),
            ("41", "42", true), ("42.0.0.1", "42", false), ("999999999", "1000", false), ("0", "0.0.1", true),
        ])
    func order(lhs: String, rhs: String, less: Bool) throws {
        let left = try #require(BundleVersion(lhs))
        let right = try #require(BundleVersion(rhs))
        #expect((left < right) == less)
    }

    @Test("missing components are 0: 2 == 2.0 == 2.0.0, hashed alike; leading zeros are numbers")
    func equality() throws {
        let versions = try ["2", "2.0", "2.0.0", "02.00"].map { try #require(BundleVersion($0)) }
        #expect(Set(versions).count == 1)
        #expect(versions.allSatisfy { $0 == versions[0] })
        #expect(versions[3].description == "2.0")
    }

    @Test(
        "anything but dot-separated integers is not a version (a policy then fails closed)",
        arguments: [
            "", "1.0b3", "1.0-beta", "v2", "2.", ".2", "1..2", "+1", "-1", " 1", "1 ", "1.2.3.4.5.6.7.8.9",
            "1234567890", "١٢", "1,2", "0x10",
        ])
    func malformed(text: String) {
        #expect(BundleVersion(text) == nil)
    }

    @Test("the minimum bundle version policy: below, at, above, letters and unreported")
    func minimumPolicy() throws {
        let policy = MinimumBundleVersionPolicy(try #require(BundleVersion("2.10")))
        #expect(policy.check(bundleVersion: "2.10") == .meetsPolicy)
        #expect(policy.check(bundleVersion: "2.10.0.1") == .meetsPolicy)
        #expect(policy.check(bundleVersion: "3") == .meetsPolicy)
        for refused in ["2.9", "2.9.99", "1.0b3", "2.10b", "", nil] as [String?] {
            guard case .failsToMeetPolicy(let reason) = policy.check(bundleVersion: refused) else {
                Issue.record("\(refused ?? "nil") met the minimum")
                continue
            }
            #expect(reason.code == .policyBundleVersion && reason.code.rawValue == "policy_bundle_version")
            #expect(reason.code.check == .policy)
        }
        let lenient = MinimumBundleVersionPolicy(try #require(BundleVersion("2.10")), allowsUnreported: true)
        #expect(lenient.check(bundleVersion: nil) == .meetsPolicy)
        #expect(lenient.check(bundleVersion: "1.0b3") != .meetsPolicy)
    }

    @Test(
        "categories by Apple's name or by number",
        arguments: [
            ("platform", 1), ("testflight", 2), ("TestFlight", 2), ("development", 3), ("app-store", 4),
            ("enterprise", 5), ("developer-id", 6), ("local-signing", 7), ("rosetta", 8), ("oop-jit", 9), ("4", 4),
            ("10", 10), ("0", 0), ("4294967295", 4_294_967_295),
        ] as [(String, UInt32)])
    func categoryNames(text: String, number: UInt32) throws {
        #expect(try #require(ValidationCategory(parsing: text)).rawValue == number)
    }

    @Test(
        "not categories: ad-hoc (Apple has no number of its own for it), none, unreported, out of range, signs",
        arguments: ["ad-hoc", "none", "unreported", "", "appstore", "4294967296", "-1", "+4", " 4", "4.0", "0x4"])
    func notCategories(text: String) {
        #expect(ValidationCategory(parsing: text) == nil)
    }

    @Test("a category's name and description")
    func categoryDescription() {
        #expect(ValidationCategory.appStore.name == "app-store")
        #expect(ValidationCategory.appStore.description == "app-store (4)")
        #expect(ValidationCategory(10).name == nil && ValidationCategory(10).description == "10")
    }

    @Test("the category policy: listed, another, unreported refused unless allowed, an empty list")
    func categoryPolicy() {
        let strict = ValidationCategoryPolicy(allowed: [4, 2])
        #expect(strict.check(category: 4) == .meetsPolicy)
        #expect(strict.check(category: 3) != .meetsPolicy)
        #expect(strict.check(category: nil) != .meetsPolicy)
        let lenient = ValidationCategoryPolicy(allowed: [4], allowsUnreported: true)
        #expect(lenient.check(category: nil) == .meetsPolicy)
        #expect(lenient.check(category: 3) != .meetsPolicy)
        // An empty list accepts no reported category: only unreported devices, when allowed.
        #expect(ValidationCategoryPolicy(allowed: []).check(category: 4) != .meetsPolicy)
        #expect(ValidationCategoryPolicy(allowed: []).check(category: nil) != .meetsPolicy)
        #expect(ValidationCategoryPolicy(allowed: [], allowsUnreported: true).check(category: nil) == .meetsPolicy)
    }
}
