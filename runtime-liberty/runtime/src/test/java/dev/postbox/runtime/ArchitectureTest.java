package dev.postbox.runtime;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.ArchConfiguration;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.postbox.runtime.checkpoint.Checkpoints;
import org.junit.jupiter.api.Test;

/** The runtime's layers, held by ArchUnit over its production classes. */
class ArchitectureTest {

  private static final JavaClasses RUNTIME = importRuntime();

  private static JavaClasses importRuntime() {
    // Only the runtime's own classes are read; what they use is judged by its name.
    ArchConfiguration.get().setResolveMissingDependenciesFromClassPath(false);
    return new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
        .importPackages("dev.postbox.runtime");
  }

  /** Every package but the Jakarta wiring: plain Java, tested without a container. */
  private static final String[] ENGINE = {
    "dev.postbox.runtime",
    "dev.postbox.runtime.api..",
    "dev.postbox.runtime.checkpoint..",
    "dev.postbox.runtime.db..",
    "dev.postbox.runtime.dedup..",
    "dev.postbox.runtime.idempotency..",
    "dev.postbox.runtime.inbox..",
    "dev.postbox.runtime.outbox..",
    "dev.postbox.runtime.relay..",
    "dev.postbox.runtime.retention.."
  };

  @Test
  void theEngineImportsNoContainerApi() {
    assertThat(RUNTIME.size()).isGreaterThan(40);
    noClasses()
        .that()
        .resideInAnyPackage(ENGINE)
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "jakarta..", "org.eclipse.microprofile..", "dev.postbox.runtime.jakarta..")
        .because("the engine is plain Java; the Jakarta wiring is a thin layer on top of it")
        .check(RUNTIME);
  }

  @Test
  void theRuntimeKnowsBrokersThroughTheSpiOnly() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.postbox.broker..")
        .because("the adapter is chosen at deployment")
        .check(RUNTIME);
  }

  @Test
  void noClassButTheDialectBranchesOnTheDatabase() {
    // A switch over the dialect compiles to reads of its constants (in a synthetic class of the
    // class that switches), so this also catches the switches.
    String dialect = dev.postbox.runtime.db.Dialect.class.getName();
    noClasses()
        .that()
        .doNotHaveFullyQualifiedName(dialect)
        .and()
        .haveNameNotMatching(java.util.regex.Pattern.quote(dialect) + "\\$.*")
        .should()
        .accessField(dev.postbox.runtime.db.Dialect.class, "POSTGRESQL")
        .orShould()
        .accessField(dev.postbox.runtime.db.Dialect.class, "MARIADB")
        .orShould()
        .accessField(dev.postbox.runtime.db.Dialect.class, "H2")
        .because("every statement that differs between databases is a named member of the dialect")
        .check(RUNTIME);
  }

  @Test
  void productionCodeHoldsNoTestInstrument() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "org.junit..", "org.assertj..", "org.awaitility..", "dev.postbox.spi.testing..")
        .orShould()
        .implement(dev.postbox.runtime.checkpoint.CheckpointListener.class)
        .orShould()
        .implement(dev.postbox.spi.BrokerProvider.class)
        .because(
            "crash points and negative controls (broker wrappers that break the promise) live in"
                + " test code")
        .check(RUNTIME);
    assertThat(Checkpoints.listeners())
        .as("the runtime jar registers no CheckpointListener of its own")
        .isEmpty();
  }
}
