extension FlowError.Code {
    /// A verification bundle that cannot be read or re-run (`bundle_invalid`).
    public static let bundleInvalid = FlowError.Code("bundle_invalid")
    /// The recording directory cannot be used (`record_unavailable`).
    public static let recordUnavailable = FlowError.Code("record_unavailable")
}
