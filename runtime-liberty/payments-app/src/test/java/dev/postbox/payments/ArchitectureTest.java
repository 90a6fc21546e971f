package dev.postbox.payments;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

class ArchitectureTest {

  private static final JavaClasses APP =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
          .importPackages("dev.postbox.payments");

  @Test
  void theAppUsesPostboxThroughItsApiOnly() {
    noClasses()
        .should()
        .dependOnClassesThat(
            resideInAPackage("dev.postbox.runtime..")
                .and(not(resideInAPackage("dev.postbox.runtime.api.."))))
        .because(
            "an application sees Postbox's API package (its handler types and annotations"
                + " included) and the SPI; the engine and the wiring may change")
        .check(APP);
  }

  @Test
  void theShippedAppHoldsNoTestInstrument() {
    JavaClasses app = APP;
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "dev.postbox.payments.crash..",
            "dev.postbox.runtime.checkpoint..",
            "org.junit..",
            "dev.postbox.spi.testing..")
        .orShould()
        .implement(dev.postbox.spi.BrokerProvider.class)
        .because(
            "crash points and the negative controls' broker wrappers live in the harness's own"
                + " jar, never in the WAR")
        .check(app);
  }
}
