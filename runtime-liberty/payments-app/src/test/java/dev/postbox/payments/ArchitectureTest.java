package dev.postbox.payments;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

class ArchitectureTest {

  @Test
  void theShippedAppHoldsNoTestInstrument() {
    JavaClasses app =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages("dev.postbox.payments");
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
