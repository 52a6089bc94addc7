import Foundation

/// Reads a YAML config into a validated ``PipelineSpec``. (Being implemented.)
public enum ConfigLoader {}
