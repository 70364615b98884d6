package import Foundation

/// Finds a key written twice in one object of a JSON text.
///
/// Foundation's parsers keep one of two equal keys and drop the other without a word, and other languages' parsers
/// may keep the other one: a configuration file with two `"policy"` objects loses every setting of one of them (a
/// validation-category list, say), and a decision request with two `"group"` members is read by a proxy in front as
/// another group than the one decided. The configuration file check and the decision route refuse such a text; this
/// scan, over text already parsed as valid JSON, names the key. Keys are compared as the parser reads them (`"a"` and
/// `"\u0061"` are one key).
package enum JSONDuplicateKeys {
    /// The dotted path of the first key given twice in one object of `data`, or `nil` when none is.
    /// - Parameter data: Valid JSON (as `JSONSerialization` accepted it).
    package static func first(in data: Data) -> String? {
        let bytes = [UInt8](data)
        var stack: [Level] = []
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "{"):
                stack.append(Level(isObject: true, path: valuePath(stack)))
            case UInt8(ascii: "["):
                stack.append(Level(isObject: false, path: valuePath(stack)))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = stack.popLast()
            case UInt8(ascii: ","):
                if let last = stack.indices.last, stack[last].isObject { stack[last].expectsKey = true }
            case UInt8(ascii: "\""):
                let end = stringEnd(bytes, from: index)
                if let last = stack.indices.last, stack[last].isObject, stack[last].expectsKey {
                    let key = decodedString(bytes[index...min(end, bytes.count - 1)]) ?? ""
                    let path = stack[last].path.isEmpty ? key : stack[last].path + "." + key
                    guard stack[last].keys.insert(key).inserted else { return path }
                    stack[last].currentKey = key
                    stack[last].expectsKey = false
                }
                index = end
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// An object or an array being read.
    private struct Level {
        let isObject: Bool
        /// The dotted path of this value.
        let path: String
        var keys: Set<String> = []
        var currentKey = ""
        var expectsKey = true

        init(isObject: Bool, path: String) {
            self.isObject = isObject
            self.path = path
            self.expectsKey = isObject
        }
    }

    /// The path of a value that starts now: under the current key of an object, the path of an array.
    private static func valuePath(_ stack: [Level]) -> String {
        guard let top = stack.last else { return "" }
        guard top.isObject else { return top.path }
        return top.path.isEmpty ? top.currentKey : top.path + "." + top.currentKey
    }

    /// The index of the quote that closes the string opened at `start`.
    private static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index
            default: index += 1
            }
        }
        return bytes.count
    }

    /// A JSON string literal, quotes included, as the parser reads it.
    private static func decodedString(_ literal: ArraySlice<UInt8>) -> String? {
        try? JSONSerialization.jsonObject(with: Data(literal), options: .fragmentsAllowed) as? String
    }
}
