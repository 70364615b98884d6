import Foundation

/// One series of the Prometheus text exposition: its name, labels and value. What the dashboard reads, so that it
/// shows exactly what `/metrics` exposes.
package struct MetricSample: Sendable, Hashable {
    /// The series' name.
    package let name: String
    /// Its labels.
    package let labels: [String: String]
    /// Its value.
    package let value: Double

    /// The samples of `text` (`# HELP` and `# TYPE` lines skipped); lines that do not parse are skipped.
    package static func parse(_ text: String) -> [MetricSample] {
        text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            return parse(line: Substring(line))
        }
    }

    private static func parse(line: Substring) -> MetricSample? {
        var labels: [String: String] = [:]
        var rest = line[...]
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        rest = rest[nameEnd...]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while let first = rest.first, first != "}" {
                guard let equals = rest.firstIndex(of: "=") else { return nil }
                let key = String(rest[..<equals]).trimmingPrefix(",")
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character == "n" ? "\n" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
                labels[String(key)] = value
                if rest.first == "," { rest = rest.dropFirst() }
            }
            guard rest.first == "}" else { return nil }
            rest = rest.dropFirst()
        }
        guard let value = Double(rest.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else {
            return nil
        }
        return MetricSample(name: name, labels: labels, value: value)
    }
}

extension Array where Element == MetricSample {
    /// The sum of the samples named `name` whose labels include `matching`, grouped by the values of `by`.
    func sum(_ name: String, by keys: [String] = [], where matching: [String: String] = [:]) -> [[String]: Double] {
        var sums: [[String]: Double] = [:]
        for sample in self where sample.name == name {
            guard matching.allSatisfy({ sample.labels[$0.key] == $0.value }) else { continue }
            sums[keys.map { sample.labels[$0] ?? "" }, default: 0] += sample.value
        }
        return sums
    }

    /// The total of the samples named `name` whose labels include `matching`.
    func total(_ name: String, where matching: [String: String] = [:]) -> Double {
        sum(name, where: matching).values.reduce(0, +)
    }
}
