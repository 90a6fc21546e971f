package dev.postbox.runtime.config;

/**
 * Writes {@code docs/configuration.md} from the declarations in {@link PostboxKeys}: the page is
 * generated, never edited by hand, and {@code ConfigurationDocTest} fails when it differs.
 */
final class ConfigurationDoc {

  private ConfigurationDoc() {}

  /** The whole page. */
  static String markdown() {
    StringBuilder md = new StringBuilder();
    md.append("# Configuration\n\n")
        .append(
            "<!-- Generated from dev.postbox.runtime.config.PostboxKeys; do not edit. Regenerate"
                + " with: ./mvnw -pl runtime-liberty/runtime test -Dtest=ConfigurationDocTest"
                + " -Dpostbox.docs.write=true -->\n\n")
        .append(
            "Every `postbox.*` key, declared once in `PostboxKeys`: the same declaration parses"
                + " and validates the key (a bad value or an unknown `postbox.*` key fails the"
                + " start, naming the key), lists it for the environment lookup, and writes this"
                + " page. Under Liberty the keys come from MicroProfile Config: `server.xml`"
                + " variables, `microprofile-config.properties`, system properties, or the"
                + " environment, where a key is spelled as in the *Environment* column (for"
                + " example `POSTBOX_RELAY_ENABLED=false`). An embedding application passes them"
                + " to `PostboxSettings.parse(Map)`.\n\n")
        .append("| Key | Environment | Type | Default | Range | Description |\n")
        .append("|---|---|---|---|---|---|\n");
    for (ConfigKey<?> k : PostboxKeys.ALL) {
      md.append("| `")
          .append(k.name())
          .append("` | `")
          .append(k.envName())
          .append("` | ")
          .append(k.type().text())
          .append(" | ")
          .append(k.defaultText())
          .append(" | ")
          .append(k.rangeText())
          .append(" | ")
          .append(k.description().replace("|", "\\|"))
          .append(" |\n");
    }
    md.append(
        "\nThe adapters' own keys (`postbox.broker.<key>`) are described with each adapter in"
            + " [brokers/](brokers/); an adapter refuses a key it does not know.\n");
    return md.toString();
  }
}
