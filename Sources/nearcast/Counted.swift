/// "1 zone", "2 zones", "1 listen address", "3 listen addresses": a count with its noun, for the
/// CLI's one-line summaries.
func counted(_ n: Int, _ noun: String, plural: String? = nil) -> String {
    "\(n) \(n == 1 ? noun : plural ?? noun + "s")"
}
