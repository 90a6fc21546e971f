package dev.postbox.spi;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.postbox.spi.testing.AdapterArchitecture;
import org.junit.jupiter.api.Test;

class ArchitectureTest {

  @Test
  void theSpiDependsOnTheJdkAlone() {
    JavaClasses spi =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages("dev.postbox.spi");
    classes()
        .that()
        .resideInAPackage("dev.postbox.spi")
        .should()
        .onlyDependOnClassesThat()
        .resideInAnyPackage("java..", "dev.postbox.spi")
        .because("the SPI goes into every application and adapter, so it brings nothing along")
        .check(spi);
  }

  @Test
  void theAdapterRuleCanFail() {
    JavaClasses leaky = new ClassFileImporter().importPackages("dev.postbox.spi.archfixture");
    assertThatThrownBy(() -> AdapterArchitecture.rule("dev.postbox.spi.archfixture").check(leaky))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("ReferenceBroker");
  }
}
