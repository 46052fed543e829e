extension Duration {
    /// The duration in seconds, as a Double (for reports, logs and metrics).
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
