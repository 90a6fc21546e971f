package dev.postbox.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No production class of the runtime is over 400 lines, unless its Javadoc says why with "(Over 400
 * lines:" (a data structure, a lookup table): a long class is a sign that two things share it.
 */
class ClassSizeTest {

  static final int MAX_LINES = 400;

  @Test
  void noProductionClassIsOver400LinesWithoutSayingWhy() throws IOException {
    Path main = Path.of("src/main/java");
    assertThat(main).isDirectory();
    List<String> tooLong = new ArrayList<>();
    try (Stream<Path> files = Files.walk(main)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        List<String> lines = Files.readAllLines(f);
        if (lines.size() > MAX_LINES && !String.join("\n", lines).contains("(Over 400 lines:")) {
          tooLong.add(main.relativize(f) + " (" + lines.size() + " lines)");
        }
      }
    }
    assertThat(tooLong).as("production classes over %d lines", MAX_LINES).isEmpty();
  }
}
